// matmul_avx2.cpp — AVX2 + FMA + F16C vector primitives for the kernels in matmul_simd.inl.
// 16 ymm registers: a 3-row x 4-token GEMM tile (12 accumulators) and a 4-row x 2-token
// GEMV tile.
#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/prefetch.h"

namespace llmwb::cpu::kernels {
namespace avx2 {

struct V {
  using reg = __m256;
  static constexpr int W = 8;
  static constexpr int kGemvRows = 4;
  static constexpr int kGemvTokens = 2;
  // The gemm tile: 3 x 4 accumulators, 3 weight vectors and one x vector in registers.
  static constexpr int kGemmRows = 3;
  static constexpr int kGemmTokens = 4;
  // A gemm row block: at most 1 MiB of packed f32 weights and kGemmBlockRows rows, so that
  // its lane sums (48 x 4 x 32 B = 6 KiB) and one x chunk (4 x kGemmKc floats) stay in L1.
  static constexpr int64_t kGemmBlockFloats = 256 * 1024;
  static constexpr int64_t kGemmBlockRows = 48;
  static constexpr int64_t kGemmKc = 512;
  // The next row block is prefetched into L2 while at most this many bytes of x are still to
  // stream through it in the current block's sweep (matmul_simd.inl, gemm_dt).
  static constexpr int64_t kGemmPrefetchXBytes = 1 << 20;

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
  static void hsum_n(const float* v, int n, float* out) {
    for (int g = 0; g < n; ++g) out[g] = hsum(load(v + g * W));
  }
  static reg load_f16(const uint8_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  // bfloat16 is the top half of a float: widen and shift.
  static reg load_bf16(const uint8_t* p) {
    const __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
  }
};

#include "backend/cpu/matmul_simd.inl"

}  // namespace avx2

// The gemv reads each weight row once for all tokens too (its row tile stays in L1 while the
// token tiles pass), so the packing gemm only pays from about this many tokens on (measured
// at 2048 x 2048, f32 and f16 weights, one thread). Both give bitwise the same y.
constexpr int kGemmMinTokens = 16;

const KernelSet& avx2_kernels() {
  static constexpr KernelSet k = {"avx2", &avx2::handles, &avx2::gemv, &avx2::gemm,
                                  &avx2::gemm_scratch_floats, &avx2::pack_x,
                                  &avx2::gemm_xp_floats, avx2::V::kGemmTokens, avx2::V::kGemmRows, kGemmMinTokens,
                                  avx2::V::kGemmBlockFloats};
  return k;
}

}  // namespace llmwb::cpu::kernels
