// qquant_avx512.cpp — the activation quantizer with AVX-512 (one block = two zmm), bitwise
// equal to quantize_block_scalar (qquant.cpp) on finite input: max|x| is exact in any order,
// d and 1 / d are the same scalar operations, x * (1 / d) is the same float product, rounded
// to nearest even by vrndscaleps instead of the add-subtract trick (the same integer for
// |v| < 2^22), clamped, and the block sum is an exact integer sum.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"   // GCC bug 105593, see matmul_avx512.cpp
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/qmatmul_kernels.h"

namespace llmwb::cpu::qkernels {

void quantize_blocks_avx512(const float* x, int64_t n_blocks, int8_t* q, float* d, float* c) {
  const __m512 lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* xb = x + b * kQB;
    const __m512 v0 = _mm512_loadu_ps(xb), v1 = _mm512_loadu_ps(xb + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
    const float db = amax / 127.0f;
    const __m512 id = _mm512_set1_ps(activation_inverse_scale(db));
    constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    const __m512 r0 = _mm512_min_ps(_mm512_max_ps(_mm512_roundscale_ps(_mm512_mul_ps(v0, id), kRound), lo), hi);
    const __m512 r1 = _mm512_min_ps(_mm512_max_ps(_mm512_roundscale_ps(_mm512_mul_ps(v1, id), kRound), lo), hi);
    const __m512i i0 = _mm512_cvttps_epi32(r0), i1 = _mm512_cvttps_epi32(r1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + b * kQB), _mm512_cvtepi32_epi8(i0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + b * kQB + 16), _mm512_cvtepi32_epi8(i1));
    const int32_t sum = _mm512_reduce_add_epi32(_mm512_add_epi32(i0, i1));
    d[b] = db;
    c[b] = db * static_cast<float>(sum);
  }
}

}  // namespace llmwb::cpu::qkernels
