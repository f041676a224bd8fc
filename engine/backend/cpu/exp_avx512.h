// exp_avx512.h — e^x in 16 lanes, for files compiled with AVX-512 flags (attention_avx512.cpp,
// silu_avx512.cpp). Header-only and inline, so that each caller's copy is built for AVX-512.
#pragma once

#include <immintrin.h>

namespace llmwb::cpu::kernels {

// e^x for x <= 0 (the softmax's s - max, silu's -|g|), 16 at a time: x = n ln2 + r with
// |r| <= ln2 / 2 (ln2 in two parts, Cody-Waite), e^r by the minimax polynomial of Cephes'
// expf (about one ulp), times 2^n by vscalefps, which also flushes what underflows to zero.
// x is clamped at -104 (e^-104 is below the smallest denormal) so that -inf cannot make
// inf - inf.
inline __m512 exp_nonpositive(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-104.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r);
  return _mm512_scalef_ps(_mm512_add_ps(p, _mm512_set1_ps(1.0f)), n);
}

}  // namespace llmwb::cpu::kernels
