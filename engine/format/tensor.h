// tensor.h — element types and a non-owning view of one weight tensor.
//
// Weights stay where the loader put them (usually inside a memory-mapped file); a TensorView
// only points at them. Matrices are row-major {rows, cols} with cols contiguous, which is
// the layout of GGUF (ne0 = cols), safetensors / PyTorch Linear ({out, in}) and llama2.c.
// A weight matrix W of a linear layer y = W x therefore has shape {out_features, in_features}.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace llmwb {

enum class DType : uint8_t {
  F32,
  F16,
  BF16,
  Q8_0,  // GGUF: blocks of 32: fp16 scale d, 32 x int8 q; x = d * q
  Q4_0,  // GGUF: blocks of 32: fp16 scale d, 16 bytes of nibbles; x = d * (q - 8);
         // byte j holds element j (low nibble) and element j + 16 (high nibble)
  // Added for quantization (engine/quant, docs/QUANTIZATION.md).
  Q4_1,  // GGUF: blocks of 32: fp16 d, fp16 m, 16 bytes of nibbles as Q4_0; x = d * q + m
  Q4_K,  // GGUF k-quants, super-blocks of 256 (ggml block_q4_K / q5_K / q6_K layouts);
  Q5_K,  //   quantizers in format/kquants.h
  Q6_K,
  INT8_ROW,       // ours: per row f32 scale s, then cols x int8 q; x = s * q (symmetric)
  INT8_ASYM_ROW,  // ours: per row f32 scale s, int32 zero point z, cols x int8; x = s * (q - z)
  INT4_G32,       // ours: Q4_1 groups of 32, the last group may be partial
  INT4_G128,      // ours: Q4_1-style groups of 128 (fp16 d, fp16 m, 64 bytes), partial tail
};

struct DTypeInfo {
  const char* name;
  int block_elems;   // elements per block (1 for plain floats)
  int block_bytes;   // bytes per block
  // Bytes at the start of every row before its first block (per-row scale and zero point of
  // INT8_ROW / INT8_ASYM_ROW), so that TensorView::row() still addresses whole rows.
  int row_header_bytes = 0;
  // A row may end in a partial block (our INT4 group types: a last group of r elements takes
  // its 4-byte d and m and ceil(r / 2) bytes of nibbles). GGUF's own types require rows to be
  // whole blocks.
  bool partial_tail = false;
};
const DTypeInfo& dtype_info(DType t);
const char* dtype_name(DType t);
// Parses "F32", "f16", "bf16", "q8_0", ... Returns false when unknown.
bool dtype_from_name(const std::string& name, DType* out);

// GGUF tensor type ids (ggml_type) <-> DType. Returns false for ids we do not support.
bool dtype_from_gguf(uint32_t ggml_type, DType* out);
uint32_t dtype_to_gguf(DType t);
// Name of any ggml type id, also unsupported ones, for error messages ("Q5_K", "type 99").
std::string gguf_type_name(uint32_t ggml_type);

// Bytes of one row of `n_elems` elements of `t` (row header and partial last block included);
// throws unless dtype_row_fits(t, n_elems).
uint64_t dtype_row_bytes(DType t, int64_t n_elems);
// Whether a row of `n_elems` elements can be stored as `t`: a multiple of the block size, or
// any length for types with partial_tail.
bool dtype_row_fits(DType t, int64_t n_elems);
// Whether quantize_row can produce `t` (every type today; kept so callers need not know).
bool dtype_can_quantize(DType t);

struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;   // outermost first
  const uint8_t* data = nullptr;
  uint64_t nbytes = 0;

  int64_t numel() const;
  int64_t rows() const { return shape.size() >= 2 ? numel() / shape.back() : 1; }
  int64_t cols() const { return shape.empty() ? 0 : shape.back(); }
  uint64_t row_bytes() const { return dtype_row_bytes(dtype, cols()); }
  const uint8_t* row(int64_t r) const { return data + r * row_bytes(); }
};

// Scalar conversions (IEEE half, bfloat16).
float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);   // round to nearest even
inline float bf16_to_fp32(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}
uint16_t fp32_to_bf16(float f);   // round to nearest even

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K super-block, from its 12
// packed bytes (ggml get_scale_min_k4). Shared by dequantize_row and the integer kernels.
void k4_scale_min(int j, const uint8_t* scales, int* sc, int* m);

// Dequantizes one row of `cols` elements of any dtype into float.
void dequantize_row(DType t, const uint8_t* src, float* dst, int64_t cols);
// Quantizes one row of float into any dtype with dtype_can_quantize (GGUF reference rounding
// for Q8_0 / Q4_0 / Q4_1, a scale search for the k-quants; our own types are described in
// docs/QUANTIZATION.md).
void quantize_row(DType t, const float* src, uint8_t* dst, int64_t cols);

}  // namespace llmwb
