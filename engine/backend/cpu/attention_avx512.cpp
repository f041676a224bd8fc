// attention_avx512.cpp — the AVX-512 attention head kernel (attention.h), hd a multiple of 16.
//
// Order (fixed for every batch, see attention.h): score j = hsum(acc) * scale, where acc's
// lane l sums q[c * 16 + l] * k_j[c * 16 + l] over c in increasing order with fused
// multiply-adds and hsum is _mm512_reduce_add_ps's fixed tree; exp with expf (as std::exp); the output
// kept in registers, out = fma(w_j, v_j, out) for j = 0, 1, ... from zero.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"   // GCC bug 105593, as in matmul_avx512.cpp
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "backend/cpu/attention.h"

namespace llmwb::cpu::kernels {

namespace {

// Scores of keys [j0, j0 + N): N independent dot products in flight, so that the FMA chain and
// the reduction of one key overlap the others'.
template <int N>
inline void scores(const float* q, const float* const* krows, int j0, int hd, float scale, float* s) {
  __m512 acc[N];
  for (int n = 0; n < N; ++n) acc[n] = _mm512_setzero_ps();
  for (int c = 0; c < hd; c += 16) {
    const __m512 qv = _mm512_loadu_ps(q + c);
    for (int n = 0; n < N; ++n) acc[n] = _mm512_fmadd_ps(qv, _mm512_loadu_ps(krows[j0 + n] + c), acc[n]);
  }
  for (int n = 0; n < N; ++n) s[j0 + n] = _mm512_reduce_add_ps(acc[n]) * scale;
}

// out[c0, c0 + 16 * N) = sum_j probs[j] * v_j over the same columns, in registers.
template <int N>
inline void weighted_sum(const float* const* vrows, const float* probs, int ctx, int c0, float* out) {
  __m512 o[N];
  for (int n = 0; n < N; ++n) o[n] = _mm512_setzero_ps();
  for (int j = 0; j < ctx; ++j) {
    const __m512 w = _mm512_set1_ps(probs[j]);
    const float* v = vrows[j] + c0;
    for (int n = 0; n < N; ++n) o[n] = _mm512_fmadd_ps(w, _mm512_loadu_ps(v + 16 * n), o[n]);
  }
  for (int n = 0; n < N; ++n) _mm512_storeu_ps(out + c0 + 16 * n, o[n]);
}

}  // namespace

void attend_head_avx512(const float* q, const float* const* krows, const float* const* vrows, int ctx, int hd,
                        float scale, float* probs, float* out) {
  int j = 0;
  for (; j + 4 <= ctx; j += 4) scores<4>(q, krows, j, hd, scale, probs);
  for (; j < ctx; ++j) scores<1>(q, krows, j, hd, scale, probs);
  float mx = -__builtin_inff();
  for (j = 0; j < ctx; ++j) mx = probs[j] > mx ? probs[j] : mx;
  float sum = 0.f;
  for (j = 0; j < ctx; ++j) {
    const float e = __builtin_expf(probs[j] - mx);
    probs[j] = e;
    sum += e;
  }
  const float inv = 1.0f / sum;
  for (j = 0; j < ctx; ++j) probs[j] *= inv;
  // Up to 8 columns vectors (128 floats) per pass over the values: the accumulators and the
  // weight broadcast stay in registers.
  int c = 0;
  for (; c + 128 <= hd; c += 128) weighted_sum<8>(vrows, probs, ctx, c, out);
  switch ((hd - c) / 16) {
    case 7: weighted_sum<7>(vrows, probs, ctx, c, out); break;
    case 6: weighted_sum<6>(vrows, probs, ctx, c, out); break;
    case 5: weighted_sum<5>(vrows, probs, ctx, c, out); break;
    case 4: weighted_sum<4>(vrows, probs, ctx, c, out); break;
    case 3: weighted_sum<3>(vrows, probs, ctx, c, out); break;
    case 2: weighted_sum<2>(vrows, probs, ctx, c, out); break;
    case 1: weighted_sum<1>(vrows, probs, ctx, c, out); break;
    default: break;
  }
}

}  // namespace llmwb::cpu::kernels
