// gguf_file.cpp — the bounds-checked GGUF parser (see gguf_file.h for the layout).
#include "format/gguf_file.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <unordered_set>

#include "llmwb/errors.h"

namespace llmwb {

namespace {

constexpr uint32_t kMaxDims = 4;         // GGML_MAX_DIMS
constexpr int kMaxArrayDepth = 8;        // nested arrays deeper than this are not metadata
constexpr uint32_t kMaxType = static_cast<uint32_t>(GgufType::F64);

// Smallest encoding of one value of type `t`, used to reject counts that cannot fit in the
// bytes left before anything is allocated for them.
uint64_t min_encoded_size(GgufType t) {
  switch (t) {
    case GgufType::U8: case GgufType::I8: case GgufType::BOOL: return 1;
    case GgufType::U16: case GgufType::I16: return 2;
    case GgufType::U32: case GgufType::I32: case GgufType::F32: return 4;
    case GgufType::U64: case GgufType::I64: case GgufType::F64: return 8;
    case GgufType::STRING: return 8;        // u64 length
    case GgufType::ARRAY: return 4 + 8;     // element type + count
  }
  return 1;
}

std::string hex_bytes(const uint8_t* p, uint64_t n) {
  std::string s;
  char buf[4];
  for (uint64_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%s%02x", i ? " " : "", p[i]);
    s += buf;
  }
  return s;
}

std::string shape_string(const std::vector<uint64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

// Sequential little-endian reader over the buffer. `context` names what is being read
// (the header, a key, a tensor) so a truncation error says where the file broke off.
class Reader {
 public:
  Reader(const uint8_t* data, uint64_t size, const std::string& where)
      : data_(data), size_(size), where_(where) {}

  std::string context = "header";

  uint64_t pos() const { return pos_; }
  uint64_t left() const { return size_ - pos_; }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(where_, context + ": " + what);
  }
  // For sentences about the thing being read: "tensor 'x' has 5 dimensions".
  [[noreturn]] void fail_sentence(const std::string& predicate) const {
    throw Error(where_, context + " " + predicate);
  }

  void need(uint64_t n) const {
    if (n > left()) {
      fail("file is truncated: " + std::to_string(n) + " bytes needed at offset " +
           std::to_string(pos_) + ", but the file ends at byte " + std::to_string(size_));
    }
  }

  template <typename T>
  T read() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));   // GGUF is little endian, like every host we build for
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string() {
    const uint64_t n = read<uint64_t>();
    if (n > left()) {
      fail("string of " + std::to_string(n) + " bytes at offset " + std::to_string(pos_) +
           " runs past the end of the file (" + std::to_string(size_) + " bytes)");
    }
    std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return s;
  }

  // Rejects `count` items of at least `min_size` bytes each that cannot fit in what is left.
  void check_count(uint64_t count, uint64_t min_size, const std::string& what) const {
    if (count > left() / min_size) {
      fail(what + " " + std::to_string(count) + " cannot fit in the " + std::to_string(left()) +
           " bytes left in the file");
    }
  }

  GgufType read_type(const char* what) {
    const uint32_t t = read<uint32_t>();
    if (t > kMaxType) fail(std::string("unknown ") + what + " " + std::to_string(t));
    return static_cast<GgufType>(t);
  }

  GgufValue read_value(GgufType t, int depth) {
    GgufValue v;
    v.type = t;
    switch (t) {
      case GgufType::U8: v.bits = read<uint8_t>(); break;
      case GgufType::I8: v.bits = static_cast<uint64_t>(static_cast<int64_t>(read<int8_t>())); break;
      case GgufType::U16: v.bits = read<uint16_t>(); break;
      case GgufType::I16: v.bits = static_cast<uint64_t>(static_cast<int64_t>(read<int16_t>())); break;
      case GgufType::U32: v.bits = read<uint32_t>(); break;
      case GgufType::I32: v.bits = static_cast<uint64_t>(static_cast<int64_t>(read<int32_t>())); break;
      case GgufType::U64: v.bits = read<uint64_t>(); break;
      case GgufType::I64: v.bits = static_cast<uint64_t>(read<int64_t>()); break;
      case GgufType::BOOL: v.bits = read<uint8_t>() != 0; break;
      case GgufType::F32: v.f = read<float>(); break;
      case GgufType::F64: v.f = read<double>(); break;
      case GgufType::STRING: v.str = read_string(); break;
      case GgufType::ARRAY: read_array(&v, depth + 1); break;
    }
    return v;
  }

 private:
  void read_array(GgufValue* v, int depth) {
    if (depth > kMaxArrayDepth) {
      fail("arrays nested more than " + std::to_string(kMaxArrayDepth) + " deep");
    }
    v->elem_type = read_type("array element type");
    const uint64_t n = read<uint64_t>();
    check_count(n, min_encoded_size(v->elem_type),
                "array of " + gguf_value_type_name(v->elem_type) + " with element count");
    if (v->elem_type == GgufType::STRING) {
      v->strings.reserve(n);
      for (uint64_t i = 0; i < n; ++i) v->strings.push_back(read_string());
    } else if (v->elem_type == GgufType::ARRAY) {
      v->arrays.reserve(n);
      for (uint64_t i = 0; i < n; ++i) v->arrays.push_back(read_value(GgufType::ARRAY, depth));
    } else if (v->elem_type == GgufType::F32 || v->elem_type == GgufType::F64) {
      v->floats.reserve(n);
      for (uint64_t i = 0; i < n; ++i) v->floats.push_back(read_value(v->elem_type, depth).f);
    } else {
      v->ints.reserve(n);
      for (uint64_t i = 0; i < n; ++i) v->ints.push_back(read_value(v->elem_type, depth).bits);
    }
  }

  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
  const std::string& where_;
};

void read_tensor_info(Reader& r, GgufTensorInfo* ti) {
  ti->name = r.read_string();
  r.context = "tensor '" + ti->name + "'";
  const uint32_t n_dims = r.read<uint32_t>();
  if (n_dims == 0 || n_dims > kMaxDims) {
    r.fail_sentence("has " + std::to_string(n_dims) + " dimensions (1 to " + std::to_string(kMaxDims) +
           " supported)");
  }
  ti->ne.resize(n_dims);
  for (uint32_t d = 0; d < n_dims; ++d) ti->ne[d] = r.read<uint64_t>();
  ti->ggml_type = r.read<uint32_t>();
  ti->offset = r.read<uint64_t>();

  // Element count, guarded against overflow (ggml keeps it in int64).
  uint64_t numel = 1;
  for (uint64_t d : ti->ne) {
    if (d == 0) r.fail_sentence("has a zero dimension (ne = " + shape_string(ti->ne) + ")");
    if (__builtin_mul_overflow(numel, d, &numel) ||
        numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      r.fail_sentence("has too many elements (ne = " + shape_string(ti->ne) + ")");
    }
  }
  if (!dtype_from_gguf(ti->ggml_type, &ti->dtype)) {
    r.fail_sentence("has type " + gguf_type_name(ti->ggml_type) + ", which llmwb does not support");
  }
  const DTypeInfo& info = dtype_info(ti->dtype);
  if (!dtype_row_fits(ti->dtype, static_cast<int64_t>(ti->ne[0]))) {
    r.fail_sentence("of type " + std::string(info.name) + " has ne0 = " + std::to_string(ti->ne[0]) +
           ", not a multiple of its block size " + std::to_string(info.block_elems) +
           ", so its byte size does not match its shape");
  }
  // Rows times row bytes (quant: row_bytes covers per-row headers and padded tail blocks of
  // llmwb's own types; for ggml's types it is ne0 / block_elems * block_bytes).
  const uint64_t rows = numel / ti->ne[0];
  if (__builtin_mul_overflow(rows, dtype_row_bytes(ti->dtype, static_cast<int64_t>(ti->ne[0])), &ti->nbytes)) {
    r.fail_sentence("has too many elements (ne = " + shape_string(ti->ne) + ")");
  }
}

}  // namespace

std::string gguf_value_type_name(GgufType t) {
  static const char* const kNames[] = {"u8",  "i8",   "u16",    "i16",   "u32", "i32", "f32",
                                       "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = static_cast<uint32_t>(t);
  return i <= kMaxType ? kNames[i] : "type " + std::to_string(i);
}

bool gguf_type_is_integer(GgufType t) {
  switch (t) {
    case GgufType::U8: case GgufType::I8: case GgufType::U16: case GgufType::I16:
    case GgufType::U32: case GgufType::I32: case GgufType::U64: case GgufType::I64:
    case GgufType::BOOL:
      return true;
    default:
      return false;
  }
}

uint64_t GgufValue::array_size() const {
  return ints.size() + floats.size() + strings.size() + arrays.size();
}

std::string GgufValue::to_string() const {
  char buf[64];
  switch (type) {
    case GgufType::I8: case GgufType::I16: case GgufType::I32: case GgufType::I64:
      return std::to_string(as_i64());
    case GgufType::U8: case GgufType::U16: case GgufType::U32: case GgufType::U64:
      return std::to_string(as_u64());
    case GgufType::BOOL:
      return bits ? "true" : "false";
    case GgufType::F32:
      std::snprintf(buf, sizeof buf, "%.7g", f);
      return buf;
    case GgufType::F64:
      std::snprintf(buf, sizeof buf, "%.15g", f);
      return buf;
    case GgufType::STRING:
      return str;
    case GgufType::ARRAY:
      return "[array of " + std::to_string(array_size()) + " " + gguf_value_type_name(elem_type) +
             "]";
  }
  return "";
}

const GgufValue* GgufFile::find(const std::string& key) const {
  for (const auto& [k, v] : kvs) {
    if (k == key) return &v;
  }
  return nullptr;
}

GgufFile GgufFile::parse(const uint8_t* data, uint64_t size, const std::string& where) {
  if (size == 0) throw Error(where, "file is empty (0 bytes), not a GGUF file");
  if (size < 4 || std::memcmp(data, "GGUF", 4) != 0) {
    throw Error(where, "not a GGUF file: it starts with bytes " +
                           hex_bytes(data, std::min<uint64_t>(size, 4)) +
                           " instead of the magic \"GGUF\" (47 47 55 46)");
  }
  Reader r(data, size, where);
  r.read<uint32_t>();   // magic, checked above

  GgufFile f;
  f.version = r.read<uint32_t>();
  if (f.version != 2 && f.version != 3) {
    const uint32_t swapped = __builtin_bswap32(f.version);
    if (swapped == 2 || swapped == 3) {
      r.fail("big-endian GGUF file; llmwb reads little-endian GGUF only");
    }
    r.fail("GGUF version " + std::to_string(f.version) +
           " is not supported (llmwb reads versions 2 and 3)");
  }
  const uint64_t n_tensors = r.read<uint64_t>();
  const uint64_t n_kv = r.read<uint64_t>();
  // Smallest key/value: empty key (8) + type (4) + one byte; smallest tensor info: empty name
  // (8) + n_dims (4) + one dim (8) + type (4) + offset (8).
  r.check_count(n_kv, 8 + 4 + 1, "metadata count n_kv =");
  r.check_count(n_tensors, 8 + 4 + 8 + 4 + 8, "tensor count n_tensors =");

  std::unordered_set<std::string> seen;
  f.kvs.reserve(n_kv);
  for (uint64_t i = 0; i < n_kv; ++i) {
    r.context = "metadata key #" + std::to_string(i);
    std::string key = r.read_string();
    r.context = "key '" + key + "'";
    if (!seen.insert(key).second) r.fail("appears twice in the metadata");
    const GgufType t = r.read_type("value type");
    f.kvs.emplace_back(std::move(key), r.read_value(t, 0));
  }

  if (const GgufValue* a = f.find("general.alignment")) {
    r.context = "key 'general.alignment'";
    if (!gguf_type_is_integer(a->type) || a->type == GgufType::BOOL) {
      r.fail_sentence("has type " + gguf_value_type_name(a->type) + ", expected u32");
    }
    if (a->bits == 0 || a->bits > (1u << 30) || (a->bits & (a->bits - 1)) != 0) {
      r.fail("alignment " + a->to_string() + " is not a power of two");
    }
    f.alignment = a->bits;
  }

  seen.clear();
  f.tensors.resize(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    r.context = "tensor info #" + std::to_string(i);
    GgufTensorInfo& ti = f.tensors[i];
    read_tensor_info(r, &ti);
    if (!seen.insert(ti.name).second) r.fail("duplicate tensor name: it appears twice");
    if (ti.offset % f.alignment != 0) {
      r.fail("data offset " + std::to_string(ti.offset) + " is misaligned (not a multiple of " +
             "the alignment " + std::to_string(f.alignment) + ")");
    }
  }

  // The data section starts at the next multiple of the alignment after the tensor infos.
  f.data_offset = (r.pos() + f.alignment - 1) / f.alignment * f.alignment;
  const uint64_t avail = size > f.data_offset ? size - f.data_offset : 0;
  for (const GgufTensorInfo& ti : f.tensors) {
    r.context = "tensor '" + ti.name + "'";
    if (ti.offset > avail || ti.nbytes > avail - ti.offset) {
      uint64_t end = 0;
      const bool overflow = __builtin_add_overflow(f.data_offset, ti.offset, &end) ||
                            __builtin_add_overflow(end, ti.nbytes, &end);
      r.fail(overflow ? "data offset " + std::to_string(ti.offset) + " is past the end of the file (" +
                            std::to_string(size) + " bytes)"
                      : "data ends at byte " + std::to_string(end) + " past the end of the file (" +
                            std::to_string(size) + " bytes)");
    }
  }
  // No two tensors may share bytes: a corrupted offset that still lands inside the file
  // would otherwise silently alias another tensor's weights.
  std::vector<size_t> order(f.tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return f.tensors[a].offset < f.tensors[b].offset; });
  for (size_t i = 1; i < order.size(); ++i) {
    const GgufTensorInfo& a = f.tensors[order[i - 1]];
    const GgufTensorInfo& b = f.tensors[order[i]];
    if (a.offset + a.nbytes > b.offset) {
      throw Error(where, "tensor '" + b.name + "': data at offset " + std::to_string(b.offset) +
                             " overlaps tensor '" + a.name + "' (offset " +
                             std::to_string(a.offset) + ", " + std::to_string(a.nbytes) + " bytes)");
    }
  }
  return f;
}

}  // namespace llmwb
