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

// attend_head for n queries that share their K/V rows: query m attends keys [0, ctx[m])
// (krows / vrows hold the longest); q[m], probs[m] and out[m] are query m's; probs may be null
// when the caller does not need the weights (only the heatmap capture does). The queries of a
// prefill tile: the query heads of one KV head under grouped-query attention, for one or more
// consecutive tokens of one sequence, a later token seeing more keys. Bitwise n attend_head
// calls. With AVX-512, more than 4 queries go 16 at a time through a kernel that puts the
// queries in the SIMD lanes (each K/V element loaded once for 16 queries, no horizontal sum
// per score; llama-110m's 512-token prefill spent a fifth of its time in attention with 4
// queries a tile), up to 4 through one that loads each K and V vector once for them.
void attend_queries(int n, const float* const* q, const int* ctx, const float* const* krows,
                    const float* const* vrows, int hd, float scale, float* const* probs, float* const* out);

namespace kernels {
// The AVX-512 kernel (attention_avx512.cpp), any hd: a tail of hd % 16 columns masked. The
// multi-query kernels below take only the sizes they say; the others' queries come here, so
// every query of such a head size has this kernel's bits.
void attend_head_avx512(const float* q, const float* const* krows, const float* const* vrows, int ctx, int hd,
                        float scale, float* probs, float* out);
// The first 4 (n >= 4) or 2 (n >= 2) of n queries sharing their K/V rows (query m over keys
// [0, ctx[m])), for hd a multiple of 32; returns how many it computed (0: none, the caller
// takes them one by one).
int attend_queries_avx512(int n, const float* const* q, const int* ctx, const float* const* krows,
                          const float* const* vrows, int hd, float scale, float* const* probs, float* const* out);
// The first min(n, 16) queries with the queries in the lanes, for hd a multiple of 16; probs
// may be null; returns how many it computed (0 when hd does not suit).
int attend_queries16_avx512(int n, const float* const* q, const int* ctx, const float* const* krows,
                            const float* const* vrows, int hd, float scale, float* const* probs, float* const* out);
}  // namespace kernels

}  // namespace llmwb::cpu
