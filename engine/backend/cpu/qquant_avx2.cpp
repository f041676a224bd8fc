// qquant_avx2.cpp — the activation quantizer with AVX2 (one block = four ymm), bitwise equal
// to quantize_block_scalar (qquant.cpp) on finite input for the reasons given in
// qquant_avx512.cpp (vroundps rounds the same float product to nearest even).
#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/qmatmul_kernels.h"

namespace llmwb::cpu::qkernels {

void quantize_blocks_avx2(const float* x, int64_t n_blocks, int8_t* q, float* d, float* c) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);   // undoes the per-lane packs
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* xb = x + b * kQB;
    __m256 v[4];
    for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(xb + 8 * i);
    const __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
                                   _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    const float db = amax / 127.0f;
    const __m256 id = _mm256_set1_ps(activation_inverse_scale(db));
    __m256i iv[4];
    for (int i = 0; i < 4; ++i) {
      const __m256 r = _mm256_round_ps(_mm256_mul_ps(v[i], id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      iv[i] = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(r, lo), hi));
    }
    // Values are in [-127, 127], so the saturating packs are exact.
    const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(iv[0], iv[1]), _mm256_packs_epi32(iv[2], iv[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + b * kQB), _mm256_permutevar8x32_epi32(p, order));
    const __m256i s = _mm256_add_epi32(_mm256_add_epi32(iv[0], iv[1]), _mm256_add_epi32(iv[2], iv[3]));
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(1, 0, 3, 2)));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(2, 3, 0, 1)));
    d[b] = db;
    c[b] = db * static_cast<float>(_mm_cvtsi128_si32(s4));
  }
}

}  // namespace llmwb::cpu::qkernels
