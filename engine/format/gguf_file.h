// gguf_file.h — a GGUF file parsed from a memory buffer: version, typed metadata, tensor
// infos and where the tensor data lies.
//
// Format (v3, little endian): https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
//   "GGUF" u32 version, u64 n_tensors, u64 n_kv,
//   n_kv x (string key, u32 value type, value),
//   n_tensors x (string name, u32 n_dims, n_dims x u64 ne, u32 ggml_type, u64 offset),
//   padding to general.alignment (default 32), then the tensor data; every offset is relative
//   to the start of the data section and a multiple of the alignment.
// Strings are u64 length + UTF-8 bytes (no terminator). v2 has the same layout as v3 (v3
// only added big-endian files), so both are read; v1 (u32 counts) is not.
//
// parse() trusts nothing: every read is bounds-checked, counts are checked against the bytes
// left before anything is allocated, and every tensor is checked (supported type, shape,
// alignment, data inside the buffer) so that a GgufFile only describes bytes that exist.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "format/tensor.h"

namespace llmwb {

// gguf_metadata_value_type.
enum class GgufType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12,
};
// "u32", "string", ... as the spec names them; "type N" for an unknown id.
std::string gguf_value_type_name(GgufType t);
bool gguf_type_is_integer(GgufType t);   // U8..I64 and BOOL

struct GgufValue {
  GgufType type = GgufType::U8;
  // Scalars: integers and BOOL in `bits` (signed types sign-extended to 64 bits, so
  // as_i64() is exact for every signed type and as_u64() for every unsigned one); F32 and
  // F64 in `f` (an F32 widened exactly); STRING in `str`.
  uint64_t bits = 0;
  double f = 0.0;
  std::string str;
  // ARRAY: the element type and the elements, in the member that fits the element type.
  GgufType elem_type = GgufType::U8;
  std::vector<uint64_t> ints;         // integer / BOOL elements, encoded like `bits`
  std::vector<double> floats;         // F32 / F64 elements
  std::vector<std::string> strings;   // STRING elements
  std::vector<GgufValue> arrays;      // ARRAY elements (nested arrays)

  int64_t as_i64() const { return static_cast<int64_t>(bits); }
  uint64_t as_u64() const { return bits; }
  uint64_t array_size() const;
  // Scalars printed as values (strings as they are), arrays as "[array of N u32]".
  std::string to_string() const;
};

struct GgufTensorInfo {
  std::string name;
  std::vector<uint64_t> ne;   // GGUF order: ne[0] is the contiguous (innermost) dimension
  uint32_t ggml_type = 0;
  DType dtype = DType::F32;
  uint64_t offset = 0;        // relative to the data section
  uint64_t nbytes = 0;        // size of the data, from the shape and the type
};

class GgufFile {
 public:
  // Throws llmwb::Error(where, ...) naming the key or tensor and what is wrong.
  static GgufFile parse(const uint8_t* data, uint64_t size, const std::string& where);

  uint32_t version = 0;
  std::vector<std::pair<std::string, GgufValue>> kvs;   // in file order
  std::vector<GgufTensorInfo> tensors;                  // in file order
  uint64_t alignment = 32;    // general.alignment
  uint64_t data_offset = 0;   // absolute offset of the data section

  const GgufValue* find(const std::string& key) const;
};

}  // namespace llmwb
