// attention_avx512.cpp — the AVX-512 attention head kernel (attention.h), hd a multiple of 16.
//
// Order (fixed for every batch, see attention.h): score j = hsum(acc) * scale, where acc's
// lane l sums q[c * 16 + l] * k_j[c * 16 + l] over c in increasing order with fused
// multiply-adds and hsum is _mm512_reduce_add_ps's fixed tree; the softmax in 16 lanes with a
// polynomial exp (softmax below); the output kept in registers: even keys and odd keys summed
// apart, each as acc = fma(w_j, v_j, acc) in increasing j from zero, then out = even + odd.
// Against the portable loop (cpu::dot_f32, std::exp, cpu::axpy) a prefill layer of tinyllama
// (512 tokens, 32 heads of 64) runs 2-3x faster on one thread.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"   // GCC bug 105593, as in matmul_avx512.cpp
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "backend/cpu/attention.h"
#include "backend/cpu/exp_avx512.h"
#include "backend/cpu/hsum_avx512.h"

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
  if constexpr (N == 8) {
    // The eight reductions together (hsum_avx512.h), bitwise those of _mm512_reduce_add_ps:
    // one reduction alone costs about as much as the 4 FMAs of a 64-wide head.
    _mm256_storeu_ps(s + j0, _mm256_mul_ps(hsum8_avx512(acc), _mm256_set1_ps(scale)));
  } else {
    for (int n = 0; n < N; ++n) s[j0 + n] = _mm512_reduce_add_ps(acc[n]) * scale;
  }
}

// out[c0, c0 + 16 * N) = sum_j probs[j] * v_j over the same columns, in registers. Two
// accumulators per vector, even and odd keys, added at the end: one chain of fused
// multiply-adds through every key would wait on the FMA latency at each key.
template <int N>
inline void weighted_sum(const float* const* vrows, const float* probs, int ctx, int c0, float* out) {
  __m512 e[N], o[N];
  for (int n = 0; n < N; ++n) e[n] = o[n] = _mm512_setzero_ps();
  int j = 0;
  for (; j + 2 <= ctx; j += 2) {
    const __m512 we = _mm512_set1_ps(probs[j]), wo = _mm512_set1_ps(probs[j + 1]);
    const float* ve = vrows[j] + c0;
    const float* vo = vrows[j + 1] + c0;
    for (int n = 0; n < N; ++n) {
      e[n] = _mm512_fmadd_ps(we, _mm512_loadu_ps(ve + 16 * n), e[n]);
      o[n] = _mm512_fmadd_ps(wo, _mm512_loadu_ps(vo + 16 * n), o[n]);
    }
  }
  if (j < ctx) {
    const __m512 we = _mm512_set1_ps(probs[j]);
    for (int n = 0; n < N; ++n) e[n] = _mm512_fmadd_ps(we, _mm512_loadu_ps(vrows[j] + c0 + 16 * n), e[n]);
  }
  for (int n = 0; n < N; ++n) _mm512_storeu_ps(out + c0 + 16 * n, _mm512_add_ps(e[n], o[n]));
}

// probs[0, ctx) = softmax of the scores in place: the maximum, e^(s - max) and their sum in
// 16 lanes (each lane over keys l, l + 16, ... in increasing order, then _mm512_reduce_add_ps;
// the last partial vector masked), then one multiply by 1 / sum.
inline void softmax(float* probs, int ctx) {
  __m512 mv = _mm512_set1_ps(-__builtin_inff());
  int j = 0;
  for (; j + 16 <= ctx; j += 16) mv = _mm512_max_ps(mv, _mm512_loadu_ps(probs + j));
  const __mmask16 tail = static_cast<__mmask16>((1u << (ctx - j)) - 1);
  if (tail) mv = _mm512_mask_max_ps(mv, tail, mv, _mm512_maskz_loadu_ps(tail, probs + j));
  const __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(mv));
  __m512 sv = _mm512_setzero_ps();
  for (j = 0; j + 16 <= ctx; j += 16) {
    const __m512 e = exp_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(probs + j), mx));
    _mm512_storeu_ps(probs + j, e);
    sv = _mm512_add_ps(sv, e);
  }
  if (tail) {
    const __m512 e = exp_nonpositive(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, probs + j), mx));
    _mm512_mask_storeu_ps(probs + j, tail, e);
    sv = _mm512_mask_add_ps(sv, tail, sv, e);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sv));
  for (j = 0; j + 16 <= ctx; j += 16) _mm512_storeu_ps(probs + j, _mm512_mul_ps(_mm512_loadu_ps(probs + j), inv));
  if (tail) _mm512_mask_storeu_ps(probs + j, tail, _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, probs + j), inv));
}

// Scores of keys [j0, j0 + 4) for G query heads that share their K rows (grouped-query
// attention): each K vector is loaded once for the G heads. Per head and key the sum is
// scores<N>'s exactly (same lanes, same order, the same reduction tree via hsum8_avx512).
template <int G>
inline void scores_grouped(const float* const* q, const float* const* krows, int j0, int hd, float scale,
                           float* const* s) {
  static_assert(G == 2 || G == 4, "G * 4 accumulators are reduced eight at a time");
  __m512 acc[G * 4];
  for (int i = 0; i < G * 4; ++i) acc[i] = _mm512_setzero_ps();
  for (int c = 0; c < hd; c += 16) {
    __m512 kv[4];
    for (int n = 0; n < 4; ++n) kv[n] = _mm512_loadu_ps(krows[j0 + n] + c);
    for (int g = 0; g < G; ++g) {
      const __m512 qv = _mm512_loadu_ps(q[g] + c);
      for (int n = 0; n < 4; ++n) acc[g * 4 + n] = _mm512_fmadd_ps(qv, kv[n], acc[g * 4 + n]);
    }
  }
  const __m256 sc = _mm256_set1_ps(scale);
  for (int g = 0; g < G; g += 2) {   // lanes 0-3: head g's four keys, lanes 4-7: head g + 1's
    const __m256 r = _mm256_mul_ps(hsum8_avx512(acc + g * 4), sc);
    _mm_storeu_ps(s[g] + j0, _mm256_castps256_ps128(r));
    _mm_storeu_ps(s[g + 1] + j0, _mm256_extractf128_ps(r, 1));
  }
}

// weighted_sum<2> for G queries over the same V rows, query g over keys [0, ctx[g]): columns
// [c0, c0 + 32) of every query's output, each V vector loaded once for the queries that use
// it. Per query the even/odd accumulators and their order are weighted_sum's: even keys into
// e, odd keys into o, each in increasing key order (the pairs every query shares first, then
// the keys only the longer queries have, one at a time), then e + o.
template <int G>
inline void weighted_sum_grouped(const float* const* vrows, const float* const* probs, const int* ctx, int c0,
                                 float* const* out) {
  int cmin = ctx[0], cmax = ctx[0];
  for (int g = 1; g < G; ++g) {
    cmin = ctx[g] < cmin ? ctx[g] : cmin;
    cmax = ctx[g] > cmax ? ctx[g] : cmax;
  }
  __m512 e[G][2], o[G][2];
  for (int g = 0; g < G; ++g) e[g][0] = e[g][1] = o[g][0] = o[g][1] = _mm512_setzero_ps();
  int j = 0;
  for (; j + 2 <= cmin; j += 2) {
    const float* ve = vrows[j] + c0;
    const float* vo = vrows[j + 1] + c0;
    const __m512 ve0 = _mm512_loadu_ps(ve), ve1 = _mm512_loadu_ps(ve + 16);
    const __m512 vo0 = _mm512_loadu_ps(vo), vo1 = _mm512_loadu_ps(vo + 16);
    for (int g = 0; g < G; ++g) {
      const __m512 we = _mm512_set1_ps(probs[g][j]), wo = _mm512_set1_ps(probs[g][j + 1]);
      e[g][0] = _mm512_fmadd_ps(we, ve0, e[g][0]);
      e[g][1] = _mm512_fmadd_ps(we, ve1, e[g][1]);
      o[g][0] = _mm512_fmadd_ps(wo, vo0, o[g][0]);
      o[g][1] = _mm512_fmadd_ps(wo, vo1, o[g][1]);
    }
  }
  for (; j < cmax; ++j) {
    const __m512 v0 = _mm512_loadu_ps(vrows[j] + c0), v1 = _mm512_loadu_ps(vrows[j] + c0 + 16);
    for (int g = 0; g < G; ++g) {
      if (j >= ctx[g]) continue;
      const __m512 w = _mm512_set1_ps(probs[g][j]);
      if (j & 1) {
        o[g][0] = _mm512_fmadd_ps(w, v0, o[g][0]);
        o[g][1] = _mm512_fmadd_ps(w, v1, o[g][1]);
      } else {
        e[g][0] = _mm512_fmadd_ps(w, v0, e[g][0]);
        e[g][1] = _mm512_fmadd_ps(w, v1, e[g][1]);
      }
    }
  }
  for (int g = 0; g < G; ++g) {
    _mm512_storeu_ps(out[g] + c0, _mm512_add_ps(e[g][0], o[g][0]));
    _mm512_storeu_ps(out[g] + c0 + 16, _mm512_add_ps(e[g][1], o[g][1]));
  }
}

// G queries sharing their K/V rows, query g over keys [0, ctx[g]). The scores of whole groups
// of 4 keys are computed for every query up to the longest context (a query's entries past its
// own are never read: its softmax and weighted sum stop at ctx[g]), the rest one key at a time.
template <int G>
void attend_heads_grouped(const float* const* q, const int* ctx, const float* const* krows,
                          const float* const* vrows, int hd, float scale, float* const* probs, float* const* out) {
  int cmax = ctx[0];
  for (int g = 1; g < G; ++g) cmax = ctx[g] > cmax ? ctx[g] : cmax;
  int j = 0;
  for (; j + 4 <= cmax; j += 4) scores_grouped<G>(q, krows, j, hd, scale, probs);
  for (int g = 0; g < G; ++g) {
    for (int jj = j; jj < ctx[g]; ++jj) scores<1>(q[g], krows, jj, hd, scale, probs[g]);
    softmax(probs[g], ctx[g]);
  }
  for (int c = 0; c < hd; c += 32) weighted_sum_grouped<G>(vrows, probs, ctx, c, out);
}

}  // namespace

void attend_head_avx512(const float* q, const float* const* krows, const float* const* vrows, int ctx, int hd,
                        float scale, float* probs, float* out) {
  int j = 0;
  for (; j + 8 <= ctx; j += 8) scores<8>(q, krows, j, hd, scale, probs);
  for (; j + 4 <= ctx; j += 4) scores<4>(q, krows, j, hd, scale, probs);
  for (; j < ctx; ++j) scores<1>(q, krows, j, hd, scale, probs);
  softmax(probs, ctx);
  // Up to 8 column vectors (128 floats) per pass over the values: the 16 accumulators and
  // the weight broadcasts stay in registers.
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

int attend_queries_avx512(int n, const float* const* q, const int* ctx, const float* const* krows,
                          const float* const* vrows, int hd, float scale, float* const* probs, float* const* out) {
  if (hd % 32 != 0) return 0;
  if (n >= 4) {
    attend_heads_grouped<4>(q, ctx, krows, vrows, hd, scale, probs, out);
    return 4;
  }
  if (n >= 2) {
    attend_heads_grouped<2>(q, ctx, krows, vrows, hd, scale, probs, out);
    return 2;
  }
  return 0;
}

}  // namespace llmwb::cpu::kernels
