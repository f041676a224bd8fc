// qmatmul.h — linear layers over quantized weights with integer dot products.
//
// y[t][o] = sum_i W[o][i] * x[t][i] for the quantized weight types (INT8_ROW, INT8_ASYM_ROW,
// INT4_G32, INT4_G128, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K): each token row of x is quantized
// once per call to int8 blocks of 32 (a float scale per block, see QUANTIZATION.md
// "Kernels"), and the weights, read in place, are multiplied with it in integers; only the
// per-block combination is float. matmul() routes these types here.
// Batch-invariant like matmul(): at a given SIMD level a token's outputs are bitwise the same
// whatever the number of tokens in the call, its position and the thread count.
#pragma once

#include <cstdint>

#include "backend/cpu/thread_pool.h"
#include "format/tensor.h"

namespace llmwb::cpu {

// Whether qmatmul handles weights of this type.
bool qmatmul_handles(DType dtype);

// The integer kernels at the current simd_level() (AVX-512 means AVX-512 VNNI when the CPU
// has it, else the AVX2 kernels). W must hold rows() * row_bytes() bytes (matmul checks).
void qmatmul(ThreadPool& pool, const TensorView& W, const float* x, int64_t n_tokens, float* y);

// The activations the kernels actually multiply: one token row of `cols` values quantized
// per block of 32 (d = max|x| / 127, q = round(x / d)) and decoded again as d * q.
void qmatmul_activation_roundtrip(const float* x, int64_t cols, float* out);

// One token row of `cols` values quantized as qmatmul does at the current simd_level() (the
// same bits at every level): q gets ceil(cols / 32) * 32 values (0 past cols), d and c one
// per block, csum their c summed in increasing block order.
void qmatmul_quantize_row(const float* x, int64_t cols, int8_t* q, float* d, float* c, float* csum);

// Name of the kernel set qmatmul uses now ("scalar", "avx2", "avx512vnni").
const char* qmatmul_kernel_name();

// What that kernel set's one-token GEMV over repacked weights does with the decode switches:
// the prefetch distance it honours (0 where its kernels do not prefetch) and the weight
// streams each thread reads (decode_streams() capped at the tiles its kernels read side by side).
struct QuantizedDecodeShape {
  int64_t prefetch_bytes = 0;
  int streams = 1;
};
QuantizedDecodeShape qmatmul_decode_shape();

}  // namespace llmwb::cpu
