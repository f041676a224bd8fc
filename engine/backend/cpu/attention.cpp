// attention.cpp — see attention.h. The portable path (any head size, any CPU) is the plain
// loop over cpu::dot_f32 / cpu::axpy; with AVX-512 the register-resident kernel of
// attention_avx512.cpp runs instead, for any head size (the columns past the last multiple of
// 16 masked: stories260K's heads of 8 and stories15M's of 48 too). Prefill spent about a
// quarter of its time in the plain loop: a call, a serial 16-lane sum and an axpy whose output
// row makes a store-to-load round trip per key.
#include "backend/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/matmul.h"
#include "backend/cpu/ops.h"

namespace llmwb::cpu {

namespace {

// The portable loop, in the order attention.h states: score(j) is key j's scaled q.k, add_v(o,
// w, j) adds w times value row j to o.
template <class Score, class AddV>
void attend_loop(int ctx, int hd, float* probs, float* out, Score score, AddV add_v) {
  float mx = -INFINITY;
  for (int j = 0; j < ctx; ++j) {
    const float d = score(j);
    probs[j] = d;
    mx = std::max(mx, d);
  }
  float sum = 0.f;
  for (int j = 0; j < ctx; ++j) {
    const float e = std::exp(probs[j] - mx);
    probs[j] = e;
    sum += e;
  }
  const float inv = 1.0f / sum;
  std::fill(out, out + hd, 0.f);
  for (int j = 0; j < ctx; ++j) {
    const float w = probs[j] * inv;
    probs[j] = w;
    add_v(out, w, j);
  }
}

void attend_head_plain(const float* q, const float* const* krows, const float* const* vrows, int ctx, int hd,
                       float scale, float* probs, float* out) {
  attend_loop(
      ctx, hd, probs, out, [&](int j) { return dot_f32(q, krows[j], hd) * scale; },
      [&](float* o, float w, int j) { axpy(o, w, vrows[j], hd); });
}

}  // namespace

void attend_head(const float* q, const float* const* krows, const float* const* vrows, int ctx, int hd, float scale,
                 float* probs, float* out) {
#if defined(__x86_64__)
  if (simd_level() == SimdLevel::Avx512) {
    kernels::attend_head_avx512(q, krows, vrows, ctx, hd, scale, probs, out);
    return;
  }
#endif
  attend_head_plain(q, krows, vrows, ctx, hd, scale, probs, out);
}

void attend_queries(int n, const float* const* q, const int* ctx, const float* const* krows,
                    const float* const* vrows, int hd, float scale, float* const* probs, float* const* out) {
  int g = 0;
#if defined(__x86_64__)
  if (simd_level() == SimdLevel::Avx512) {
    while (n - g > 4) {
      const int done = kernels::attend_queries16_avx512(n - g, q + g, ctx + g, krows, vrows, hd, scale,
                                                        probs ? probs + g : nullptr, out + g);
      if (done == 0) break;
      g += done;
    }
  }
#endif
  if (g == n) return;
  // The kernels below keep their weights in probs: without the caller's, this thread's own.
  thread_local std::vector<float> scratch;
  thread_local std::vector<float*> rows;
  float* const* pr = probs;
  if (!pr) {
    int cmax = 0;
    for (int m = g; m < n; ++m) cmax = std::max(cmax, ctx[m]);
    scratch.resize(static_cast<size_t>(n) * cmax);
    rows.resize(static_cast<size_t>(n));
    for (int m = g; m < n; ++m) rows[static_cast<size_t>(m)] = scratch.data() + static_cast<size_t>(m) * cmax;
    pr = rows.data();
  }
#if defined(__x86_64__)
  if (simd_level() == SimdLevel::Avx512) {
    while (g < n) {
      const int done =
          kernels::attend_queries_avx512(n - g, q + g, ctx + g, krows, vrows, hd, scale, pr + g, out + g);
      if (done == 0) break;
      g += done;
    }
  }
#endif
  for (; g < n; ++g) attend_head(q[g], krows, vrows, ctx[g], hd, scale, pr[g], out[g]);
}

}  // namespace llmwb::cpu
