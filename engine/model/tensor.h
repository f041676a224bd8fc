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
};

struct DTypeInfo {
  const char* name;
  int block_elems;   // elements per block (1 for plain floats)
  int block_bytes;   // bytes per block
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

// Bytes needed for `n_elems` elements of `t`; n_elems must be a multiple of the block size.
uint64_t dtype_row_bytes(DType t, int64_t n_elems);

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

// Dequantizes one row of `cols` elements of any dtype into float.
void dequantize_row(DType t, const uint8_t* src, float* dst, int64_t cols);
// Quantizes one row of float into Q8_0 / Q4_0 / F16 / BF16 / F32 (GGUF reference rounding).
void quantize_row(DType t, const float* src, uint8_t* dst, int64_t cols);

}  // namespace llmwb
