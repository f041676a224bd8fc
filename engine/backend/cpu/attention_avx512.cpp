// attention_avx512.cpp — the AVX-512 attention head kernels (attention.h): one head of any size
// (the last columns of a size that is not a multiple of 16 masked), and the multi-query ones.
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
#include "backend/cpu/prefetch.h"
#include "memory/huge_page_allocator.h"

namespace llmwb::cpu::kernels {

namespace {

// Scores of keys [j0, j0 + N): N independent dot products in flight, so that the FMA chain and
// the reduction of one key overlap the others'.
template <int N>
inline void scores(const float* q, const float* const* krows, int j0, int hd, float scale, float* s) {
  __m512 acc[N];
  for (int n = 0; n < N; ++n) acc[n] = _mm512_setzero_ps();
  int c = 0;
  for (; c + 16 <= hd; c += 16) {
    const __m512 qv = _mm512_loadu_ps(q + c);
    for (int n = 0; n < N; ++n) acc[n] = _mm512_fmadd_ps(qv, _mm512_loadu_ps(krows[j0 + n] + c), acc[n]);
  }
  if (c < hd) {   // a head size that is not a multiple of 16: the last columns masked, zeros elsewhere
    const __mmask16 m = static_cast<__mmask16>((1u << (hd - c)) - 1u);
    const __m512 qv = _mm512_maskz_loadu_ps(m, q + c);
    for (int n = 0; n < N; ++n) acc[n] = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(m, krows[j0 + n] + c), acc[n]);
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
// multiply-adds through every key would wait on the FMA latency at each key. With Tail the
// last vector holds only the columns in `last` (a head size that is not a multiple of 16):
// its loads and its store are masked, every lane's order the same.
template <int N, bool Tail = false>
inline void weighted_sum(const float* const* vrows, const float* probs, int ctx, int c0, float* out,
                         __mmask16 last = 0xFFFF) {
  // Vector n of a row: the last one masked with Tail.
  const auto load = [&](const float* p, int n) {
    return Tail && n == N - 1 ? _mm512_maskz_loadu_ps(last, p) : _mm512_loadu_ps(p);
  };
  __m512 e[N], o[N];
  for (int n = 0; n < N; ++n) e[n] = o[n] = _mm512_setzero_ps();
  int j = 0;
  for (; j + 2 <= ctx; j += 2) {
    const __m512 we = _mm512_set1_ps(probs[j]), wo = _mm512_set1_ps(probs[j + 1]);
    const float* ve = vrows[j] + c0;
    const float* vo = vrows[j + 1] + c0;
    for (int n = 0; n < N; ++n) {
      e[n] = _mm512_fmadd_ps(we, load(ve + 16 * n, n), e[n]);
      o[n] = _mm512_fmadd_ps(wo, load(vo + 16 * n, n), o[n]);
    }
  }
  if (j < ctx) {
    const __m512 we = _mm512_set1_ps(probs[j]);
    for (int n = 0; n < N; ++n) e[n] = _mm512_fmadd_ps(we, load(vrows[j] + c0 + 16 * n, n), e[n]);
  }
  for (int n = 0; n < N; ++n) {
    if (Tail && n == N - 1) _mm512_mask_storeu_ps(out + c0 + 16 * n, last, _mm512_add_ps(e[n], o[n]));
    else _mm512_storeu_ps(out + c0 + 16 * n, _mm512_add_ps(e[n], o[n]));
  }
}

// out[c0, c0 + cols) for the 1 <= cols <= 128 columns left after the passes of 128: one pass
// of ceil(cols / 16) vectors, the last masked where cols is not a multiple of 16.
template <int N = 8>
inline void weighted_sum_rest(const float* const* vrows, const float* probs, int ctx, int c0, int cols, float* out) {
  if ((cols + 15) / 16 == N) {
    if (cols % 16 == 0) weighted_sum<N>(vrows, probs, ctx, c0, out);
    else weighted_sum<N, true>(vrows, probs, ctx, c0, out, static_cast<__mmask16>((1u << (cols % 16)) - 1u));
  } else if constexpr (N > 1) {
    weighted_sum_rest<N - 1>(vrows, probs, ctx, c0, cols, out);
  }
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

// ---- Up to 16 queries in the 16 lanes (prefill tiles) ----
//
// The kernels above put a head's 16 dimensions in the lanes and pay a horizontal reduction per
// score; with 16 queries sharing K/V rows, the queries go in the lanes instead: Q^T (hd rows of
// 16 queries' values) is built once per tile, each key's elements are broadcast, and a score
// row S^T[j] holds key j's score for all 16 queries. The arithmetic per query is still
// scores<N>'s: chain l (l < 16) sums q[c * 16 + l] * k[c * 16 + l] over c in increasing order
// with fused multiply-adds from zero, and the 16 chains are added by _mm512_reduce_add_ps's
// tree (distance 8, then 4, 2, 1) -- here with vector adds, the tree's pairs unchanged -- then
// times scale. The softmax and the weighted sum follow softmax() and weighted_sum<N>() lane by
// lane: so every query gets attend_head_avx512's bits, whatever it is tiled with.
constexpr int kLanes = 16;

// The chains l = M, M + 8, M + 4, M + 12 for J keys, added to the tree's s4[M] =
// (chain M + chain M+8) + (chain M+4 + chain M+12).
template <int J, int M>
inline void score_quarter(const float* qt, const float* const* kp, int hd, __m512* s4) {
  __m512 a[J][4];
  for (int j = 0; j < J; ++j) a[j][0] = a[j][1] = a[j][2] = a[j][3] = _mm512_setzero_ps();
  for (int c = 0; c < hd; c += 16) {
    const float* qc = qt + c * kLanes;
    const __m512 q0 = _mm512_load_ps(qc + M * kLanes), q1 = _mm512_load_ps(qc + (M + 8) * kLanes);
    const __m512 q2 = _mm512_load_ps(qc + (M + 4) * kLanes), q3 = _mm512_load_ps(qc + (M + 12) * kLanes);
    for (int j = 0; j < J; ++j) {
      const float* k = kp[j] + c;
      a[j][0] = _mm512_fmadd_ps(q0, _mm512_set1_ps(k[M]), a[j][0]);
      a[j][1] = _mm512_fmadd_ps(q1, _mm512_set1_ps(k[M + 8]), a[j][1]);
      a[j][2] = _mm512_fmadd_ps(q2, _mm512_set1_ps(k[M + 4]), a[j][2]);
      a[j][3] = _mm512_fmadd_ps(q3, _mm512_set1_ps(k[M + 12]), a[j][3]);
    }
  }
  for (int j = 0; j < J; ++j) s4[j] = _mm512_add_ps(_mm512_add_ps(a[j][0], a[j][1]), _mm512_add_ps(a[j][2], a[j][3]));
}

// S^T rows [j0, j0 + J): s2[0] = s4[0] + s4[2], s2[1] = s4[1] + s4[3], score = s2[0] + s2[1].
// The K rows of one head lie a whole KV slot apart (kv_heads * hd floats, across 4 KiB pages),
// which the hardware prefetchers do not follow: the rows kPrefetchKeys ahead are asked for
// while these are summed (without it, the first load of each row took a fifth of the time).
constexpr int kPrefetchKeys = 8;

[[gnu::always_inline]] inline void prefetch_row(const float* row, int floats) {
  for (int i = 0; i < floats; i += 16) prefetch_t0(row + i);
}

template <int J>
inline void scores_lanes(const float* qt, const float* const* krows, int j0, int cmax, int hd, __m512 scale,
                         float* st) {
  const float* const* kp = krows + j0;
  for (int j = j0 + kPrefetchKeys; j < j0 + kPrefetchKeys + J && j < cmax; ++j) prefetch_row(krows[j], hd);
  __m512 x[J], y[J], h0[J];
  score_quarter<J, 0>(qt, kp, hd, x);
  score_quarter<J, 2>(qt, kp, hd, y);
  for (int j = 0; j < J; ++j) h0[j] = _mm512_add_ps(x[j], y[j]);
  score_quarter<J, 1>(qt, kp, hd, x);
  score_quarter<J, 3>(qt, kp, hd, y);
  for (int j = 0; j < J; ++j)
    _mm512_store_ps(st + (j0 + j) * kLanes, _mm512_mul_ps(_mm512_add_ps(h0[j], _mm512_add_ps(x[j], y[j])), scale));
}

// softmax() per lane over S^T rows [0, cmax), lane i over its rows j < ctx[i]: the maximum;
// e^(s - max) summed into 16 accumulators by j mod 16 in increasing j, reduced by the
// distance 8/4/2/1 tree; each e times 1 / sum. Rows past a lane's length are left undefined.
inline void softmax_lanes(float* st, int cmax, __m512i ctxv) {
  __m512 mv = _mm512_set1_ps(-__builtin_inff());
  for (int j = 0; j < cmax; ++j) {
    const __mmask16 live = _mm512_cmpgt_epi32_mask(ctxv, _mm512_set1_epi32(j));
    mv = _mm512_mask_max_ps(mv, live, mv, _mm512_load_ps(st + j * kLanes));
  }
  __m512 sv[kLanes];
  for (int m = 0; m < kLanes; ++m) sv[m] = _mm512_setzero_ps();
  for (int j0 = 0; j0 < cmax; j0 += kLanes) {
#pragma GCC unroll 16
    for (int m = 0; m < kLanes; ++m) {
      const int j = j0 + m;
      if (j >= cmax) break;
      const __mmask16 live = _mm512_cmpgt_epi32_mask(ctxv, _mm512_set1_epi32(j));
      const __m512 e = exp_nonpositive(_mm512_sub_ps(_mm512_load_ps(st + j * kLanes), mv));
      _mm512_store_ps(st + j * kLanes, e);
      sv[m] = _mm512_mask_add_ps(sv[m], live, sv[m], e);
    }
  }
  for (int m = 0; m < 8; ++m) sv[m] = _mm512_add_ps(sv[m], sv[m + 8]);
  for (int m = 0; m < 4; ++m) sv[m] = _mm512_add_ps(sv[m], sv[m + 4]);
  for (int m = 0; m < 2; ++m) sv[m] = _mm512_add_ps(sv[m], sv[m + 2]);
  const __m512 inv = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_add_ps(sv[0], sv[1]));
  for (int j = 0; j < cmax; ++j) _mm512_store_ps(st + j * kLanes, _mm512_mul_ps(_mm512_load_ps(st + j * kLanes), inv));
}

// weighted_sum() for the G queries g0.. of the tile (query g's weight of key j at
// pt[j * 16 + g]), columns [c0, c0 + 16 NV): even keys into e, odd into o, each in increasing
// key order (pairs every query has first, then the longer queries' keys one at a time), e + o.
template <int G, int NV, bool kPrefetch>
inline void wsum_lanes(const float* const* vrows, const float* pt, const int* ctx, int c0, float* const* out) {
  int cmin = ctx[0], cmax = ctx[0];
  for (int g = 1; g < G; ++g) {
    cmin = ctx[g] < cmin ? ctx[g] : cmin;
    cmax = ctx[g] > cmax ? ctx[g] : cmax;
  }
  __m512 e[G][NV], o[G][NV];
  for (int g = 0; g < G; ++g)
    for (int v = 0; v < NV; ++v) e[g][v] = o[g][v] = _mm512_setzero_ps();
  int j = 0;
  for (; j + 2 <= cmin; j += 2) {
    if constexpr (kPrefetch) {   // the first group's pass brings the V columns in (see scores_lanes)
      if (j + kPrefetchKeys + 1 < cmin) {
        for (int v = 0; v < NV; ++v) {
          prefetch_t0(vrows[j + kPrefetchKeys] + c0 + 16 * v);
          prefetch_t0(vrows[j + kPrefetchKeys + 1] + c0 + 16 * v);
        }
      }
    }
    __m512 ve[NV], vo[NV];
    for (int v = 0; v < NV; ++v) {
      ve[v] = _mm512_loadu_ps(vrows[j] + c0 + 16 * v);
      vo[v] = _mm512_loadu_ps(vrows[j + 1] + c0 + 16 * v);
    }
    const float* pe = pt + j * kLanes;
    for (int g = 0; g < G; ++g) {
      const __m512 we = _mm512_set1_ps(pe[g]), wo = _mm512_set1_ps(pe[kLanes + g]);
      for (int v = 0; v < NV; ++v) {
        e[g][v] = _mm512_fmadd_ps(we, ve[v], e[g][v]);
        o[g][v] = _mm512_fmadd_ps(wo, vo[v], o[g][v]);
      }
    }
  }
  for (; j < cmax; ++j) {
    __m512 vv[NV];
    for (int v = 0; v < NV; ++v) vv[v] = _mm512_loadu_ps(vrows[j] + c0 + 16 * v);
    for (int g = 0; g < G; ++g) {
      if (j >= ctx[g]) continue;
      const __m512 w = _mm512_set1_ps(pt[j * kLanes + g]);
      for (int v = 0; v < NV; ++v) {
        if (j & 1) o[g][v] = _mm512_fmadd_ps(w, vv[v], o[g][v]);
        else e[g][v] = _mm512_fmadd_ps(w, vv[v], e[g][v]);
      }
    }
  }
  for (int g = 0; g < G; ++g)
    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(out[g] + c0 + 16 * v, _mm512_add_ps(e[g][v], o[g][v]));
}

template <int NV>
inline void wsum_tile(int n, const float* const* vrows, const float* pt, const int* ctx, int c0, float* const* out) {
  int g = 0;
  if (n >= 6) {
    wsum_lanes<6, NV, true>(vrows, pt, ctx, c0, out);
    g = 6;
  }
  for (; g + 6 <= n; g += 6) wsum_lanes<6, NV, false>(vrows, pt + g, ctx + g, c0, out + g);
  for (; g + 4 <= n; g += 4) wsum_lanes<4, NV, false>(vrows, pt + g, ctx + g, c0, out + g);
  for (; g + 2 <= n; g += 2) wsum_lanes<2, NV, false>(vrows, pt + g, ctx + g, c0, out + g);
  for (; g < n; ++g) wsum_lanes<1, NV, false>(vrows, pt + g, ctx + g, c0, out + g);
}

// Grow-only 64-byte aligned scratch of this thread (Q^T and S^T of a tile).
float* lane_scratch(size_t floats) {
  thread_local HugeFloatVector buf;
  return grow_aligned(buf, floats);
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
  if (c < hd) weighted_sum_rest(vrows, probs, ctx, c, hd - c, out);
}

int attend_queries16_avx512(int n, const float* const* q, const int* ctx, const float* const* krows,
                            const float* const* vrows, int hd, float scale, float* const* probs, float* const* out) {
  if (hd % 16 != 0 || n <= 0) return 0;
  if (n > kLanes) n = kLanes;
  int ctx16[kLanes] = {};
  int cmax = 0;
  for (int i = 0; i < n; ++i) {
    ctx16[i] = ctx[i];
    cmax = ctx[i] > cmax ? ctx[i] : cmax;
  }
  float* qt = lane_scratch(static_cast<size_t>(hd + cmax) * kLanes);
  float* st = qt + static_cast<size_t>(hd) * kLanes;
  for (int d = 0; d < hd; ++d) {
    float* row = qt + d * kLanes;
    for (int i = 0; i < kLanes; ++i) row[i] = i < n ? q[i][d] : 0.0f;
  }
  const __m512 sc = _mm512_set1_ps(scale);
  int j = 0;
  for (int jj = 0; jj < kPrefetchKeys && jj < cmax; ++jj) prefetch_row(krows[jj], hd);
  for (; j + 4 <= cmax; j += 4) scores_lanes<4>(qt, krows, j, cmax, hd, sc, st);
  for (; j < cmax; ++j) scores_lanes<1>(qt, krows, j, cmax, hd, sc, st);
  softmax_lanes(st, cmax, _mm512_loadu_si512(ctx16));
  int c = 0;
  for (; c + 32 <= hd; c += 32) wsum_tile<2>(n, vrows, st, ctx16, c, out);
  if (c < hd) wsum_tile<1>(n, vrows, st, ctx16, c, out);
  if (probs) {
    for (int i = 0; i < n; ++i)
      for (int jj = 0; jj < ctx16[i]; ++jj) probs[i][jj] = st[jj * kLanes + i];
  }
  return n;
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
