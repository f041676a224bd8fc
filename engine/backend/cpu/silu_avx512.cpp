// silu_avx512.cpp — SwiGLU's gate (ops.h, silu_mul) in 16 lanes for AVX-512 CPUs.
//
// The scalar loop called libm's expf once per element: ~2 % of a 512-token tinyllama prefill
// (perf, F32 weights, 2 threads). Here e = e^-|g| comes from the polynomial of
// exp_avx512.h, then silu(g) = g / (1 + e) for g >= 0 and g e / (1 + e) for g < 0 (the same
// value, g / (1 + e^-g), without e^-g overflowing for large negative g). Every element,
// the last partial vector's too (masked), goes through the same instructions, so its result
// depends on its own g and u only, never on n or its index: the op stays batch-invariant.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"   // GCC bug 105593, as in matmul_avx512.cpp
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/exp_avx512.h"
#include "backend/cpu/ops.h"

namespace llmwb::cpu::kernels {

namespace {

inline __m512 silu_times(__m512 g, __m512 u) {
  const __m512 e = exp_nonpositive(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_abs_ps(g)));
  const __mmask16 neg = _mm512_cmp_ps_mask(g, _mm512_setzero_ps(), _CMP_LT_OQ);
  const __m512 num = _mm512_mask_mul_ps(g, neg, g, e);
  return _mm512_mul_ps(_mm512_div_ps(num, _mm512_add_ps(_mm512_set1_ps(1.0f), e)), u);
}

}  // namespace

void silu_mul_avx512(float* gate, const float* up, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(gate + i, silu_times(_mm512_loadu_ps(gate + i), _mm512_loadu_ps(up + i)));
  }
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(gate + i, m, silu_times(_mm512_maskz_loadu_ps(m, gate + i), _mm512_maskz_loadu_ps(m, up + i)));
  }
}

}  // namespace llmwb::cpu::kernels
