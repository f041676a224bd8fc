// attention.h — one attention head of one token on the CPU: softmax(q . K^T * scale) V over
// the token's context, the K and V rows given by pointer (paged: the caller resolves its
// block table). CpuBackend::attention deals these (token, head) tasks to its threads.
//
// Batch invariance: a head's result depends only on q, its K/V rows and their count, in one
// fixed order per SIMD level: scores in increasing key order, each a dot product summed as
// stated by the kernel; the maximum; exp(s - max) and their sum in increasing key order; then
// out = sum_j (e_j / sum) * v_j accumulated element-wise in the kernel's fixed order (the
// portable loop: cpu::axpy per key from a zeroed row; AVX-512: see attention_avx512.cpp).
#pragma once

#include <cstdint>

namespace llmwb::cpu {

// out[0, hd) = attention of q over the ctx keys/values krows[j] / vrows[j] (hd floats each).
// probs[0, ctx) receives the normalised attention weights (the capture for the heatmap).
void attend_head(const float* q, const float* const* krows, const float* const* vrows, int ctx, int hd, float scale,
                 float* probs, float* out);

// The same over an int8 KV cache (--kv-dtype int8): K row j is kscale[j] * krows[j][i], V row j
// is vscale[j] * vrows[j][i]. The codes are widened in registers (cpu::dot_f32_i8 /
// cpu::axpy_i8) and the scale applied to each sum, never a float copy of the cache; the order
// is the portable loop's.
void attend_head_i8(const float* q, const int8_t* const* krows, const float* kscale, const int8_t* const* vrows,
                    const float* vscale, int ctx, int hd, float scale, float* probs, float* out);

namespace kernels {
// The AVX-512 kernel (attention_avx512.cpp), for hd a multiple of 16.
void attend_head_avx512(const float* q, const float* const* krows, const float* const* vrows, int ctx, int hd,
                        float scale, float* probs, float* out);
}  // namespace kernels

}  // namespace llmwb::cpu
