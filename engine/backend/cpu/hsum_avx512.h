// hsum_avx512.h — horizontal sums of eight AVX-512 vectors at once, bitwise equal to summing
// each alone with the fixed tree of GCC's _mm512_reduce_add_ps (lanes paired at distance 8,
// then 4, 2, 1). Include only from files compiled for AVX-512 (*_avx512.cpp).
//
// One level of the tree is done for all eight vectors with one add per pair of vectors (a
// transpose-and-add): about 3 instructions per sum instead of the 8 of a lone reduction,
// which matters where short dot products are reduced one after another (the matmul's tile
// ends, attention's scores).
#pragma once

#include <immintrin.h>

namespace llmwb::cpu::kernels {

// out lane i = the sum of the 16 lanes of v[i], i < 8, each summed as described above.
inline __m256 hsum8_avx512(const __m512* v) {
  __m512 b[4], c[2];
  for (int i = 0; i < 4; ++i) {   // distance 8: [x[l] + x[l + 8] | y[l] + y[l + 8]], l < 8
    const __m512 x = v[2 * i], y = v[2 * i + 1];
    b[i] = _mm512_add_ps(_mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(3, 2, 3, 2)));
  }
  for (int i = 0; i < 2; ++i) {   // distance 4: 128-bit quarter k holds vector 4 i + k
    c[i] = _mm512_add_ps(_mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)));
  }
  // distance 2: quarter k lanes 0-1 from vector k, lanes 2-3 from vector 4 + k
  const __m512 e = _mm512_add_ps(_mm512_shuffle_ps(c[0], c[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                 _mm512_shuffle_ps(c[0], c[1], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 f = _mm512_add_ps(e, _mm512_movehdup_ps(e));   // distance 1: lanes 4k and 4k + 2
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_castps512_ps256(_mm512_permutexvar_ps(order, f));
}

}  // namespace llmwb::cpu::kernels
