// matmul_avx512.cpp — AVX-512 (F/BW/VL) vector primitives for the kernels in matmul_simd.inl.
// 32 zmm registers allow a 12-row x 32-token GEMM micro-kernel (24 accumulators) and a
// 4-row x 4-token GEMV tile.
// GCC 12 reports its own _mm512_undefined_* placeholders in the AVX-512 intrinsics headers as
// "(maybe) used uninitialized" once they are inlined (GCC bug 105593); the warning is spurious.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/matmul_kernels.h"

namespace llmwb::cpu::kernels {
namespace avx512 {

struct V {
  using reg = __m512;
  static constexpr int W = 16;
  static constexpr int kGemvRows = 4;
  static constexpr int kGemvTokens = 4;
  static constexpr int kGemmRows = 12;
  static constexpr int kGemmVecs = 2;
  static constexpr int kPanel = W * kGemmVecs;
  // kKc x kPanelsPerPass x kPanel floats of packed x (1 MiB) stay in L2; kRowBlock rows of
  // partial sums (kRowBlock x kPanelsPerPass x kPanel floats) live beside them.
  static constexpr int kPanelsPerPass = 16;
  static constexpr int kRowBlock = 192;
  static constexpr int kKc = 512;

  static reg zero() { return _mm512_setzero_ps(); }
  static reg load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, reg v) { _mm512_storeu_ps(p, v); }
  static reg set1(float f) { return _mm512_set1_ps(f); }
  static reg fma(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
  static reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
  static float hsum(reg v) { return _mm512_reduce_add_ps(v); }
  static reg load_f16(const uint8_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  // bfloat16 is the top half of a float: widen and shift.
  static reg load_bf16(const uint8_t* p) {
    const __m512i u = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(u, 16));
  }
  static reg load_i8(const uint8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static reg nibbles(__m128i b) {
    const __m512i q = _mm512_cvtepu8_epi32(_mm_and_si128(b, _mm_set1_epi8(0x0F)));
    return _mm512_cvtepi32_ps(_mm512_sub_epi32(q, _mm512_set1_epi32(8)));
  }
  static reg load_q4lo(const uint8_t* p) {
    return nibbles(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static reg load_q4hi(const uint8_t* p) {
    return nibbles(_mm_srli_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), 4));
  }
};

#include "backend/cpu/matmul_simd.inl"

}  // namespace avx512

const KernelSet& avx512_kernels() {
  static constexpr KernelSet k = {"avx512", &avx512::gemv, &avx512::gemm, avx512::V::kPanel,
                              avx512::V::kGemmRows, 16,
                              avx512::gemm_scratch_floats()};
  return k;
}

}  // namespace llmwb::cpu::kernels
