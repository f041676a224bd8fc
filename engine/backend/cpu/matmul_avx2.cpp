// matmul_avx2.cpp — AVX2 + FMA + F16C vector primitives for the kernels in matmul_simd.inl.
// 16 ymm registers: a 6-row x 16-token GEMM micro-kernel (12 accumulators) and a
// 4-row x 2-token GEMV tile.
#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/matmul_kernels.h"

namespace llmwb::cpu::kernels {
namespace avx2 {

struct V {
  using reg = __m256;
  static constexpr int W = 8;
  static constexpr int kGemvRows = 4;
  static constexpr int kGemvTokens = 2;
  static constexpr int kGemmRows = 6;
  static constexpr int kGemmVecs = 2;
  static constexpr int kPanel = W * kGemmVecs;
  // kKc x kPanelsPerPass x kPanel floats of packed x (1 MiB) stay in L2; kRowBlock rows of
  // partial sums (kRowBlock x kPanelsPerPass x kPanel floats) live beside them.
  static constexpr int kPanelsPerPass = 64;
  static constexpr int kRowBlock = 96;
  static constexpr int kKc = 256;

  static reg zero() { return _mm256_setzero_ps(); }
  static reg load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, reg v) { _mm256_storeu_ps(p, v); }
  static reg set1(float f) { return _mm256_set1_ps(f); }
  static reg fma(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
  static reg mul(reg a, reg b) { return _mm256_mul_ps(a, b); }
  static float hsum(reg v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static reg load_f16(const uint8_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  // bfloat16 is the top half of a float: widen and shift.
  static reg load_bf16(const uint8_t* p) {
    const __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
  }
  static reg load_i8(const uint8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  static reg nibbles(__m128i b) {
    const __m256i q = _mm256_cvtepu8_epi32(_mm_and_si128(b, _mm_set1_epi8(0x0F)));
    return _mm256_cvtepi32_ps(_mm256_sub_epi32(q, _mm256_set1_epi32(8)));
  }
  static reg load_q4lo(const uint8_t* p) {
    return nibbles(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  }
  static reg load_q4hi(const uint8_t* p) {
    return nibbles(_mm_srli_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)), 4));
  }
};

#include "backend/cpu/matmul_simd.inl"

}  // namespace avx2

const KernelSet& avx2_kernels() {
  static constexpr KernelSet k = {"avx2", &avx2::gemv, &avx2::gemm, avx2::V::kPanel,
                              avx2::V::kGemmRows, 8,
                              avx2::gemm_scratch_floats()};
  return k;
}

}  // namespace llmwb::cpu::kernels
