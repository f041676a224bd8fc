// ops.h — the element-wise and reduction vector ops of the forward pass on the CPU.
//
// They are O(n) per token against the O(n^2) of the matmuls, so they are written plainly;
// the reductions keep several partial sums so that the compiler can vectorise them
// (float addition is not reassociated otherwise), and the hot ones are compiled for
// AVX-512, AVX2 and baseline x86-64, the loader picking one at start-up (GCC target_clones).
#pragma once

#include <cstdint>

namespace llmwb::cpu {

// out[i] = x[i] / sqrt(mean(x^2) + eps) * weight[i]  (RMSNorm, Zhang & Sennrich 2019).
// out may equal x. Norm weights are converted to float once at load time.
void rmsnorm(float* out, const float* x, const float* weight, int64_t n, float eps);
// gate[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g))  (SwiGLU, Shazeer 2020).
// At the AVX-512 level kernels::silu_mul_avx512 (polynomial exp, within a few ulps of the
// scalar loop); either way each element's result depends on its own inputs only.
void silu_mul(float* gate, const float* up, int64_t n);
// y[i] += x[i]
void add_inplace(float* y, const float* x, int64_t n);
// x = softmax(x), computed as exp(x - max) / sum so that large logits cannot overflow.
void softmax_inplace(float* x, int64_t n);
// sum a[i] * b[i]
float dot_f32(const float* a, const float* b, int64_t n);
// y[i] += a * x[i]
void axpy(float* y, float a, const float* x, int64_t n);
// dst[i] = scale * src[i]: an int8 KV cache row decoded (KVCache::load's values) into the
// attention kernels' f32 scratch.
void i8_to_f32(const int8_t* src, float scale, float* dst, int64_t n);
// dst[i] = the IEEE half src[i] as float (exact): vcvtph2ps at the AVX2 (F16C) and AVX-512
// levels, fp16_to_fp32 otherwise. The f16 KV cache's rows go through it into the attention
// kernels' f32 scratch.
void f16_to_f32(const uint16_t* src, float* dst, int64_t n);

namespace kernels {
void silu_mul_avx512(float* gate, const float* up, int64_t n);   // silu_avx512.cpp
}  // namespace kernels

}  // namespace llmwb::cpu
