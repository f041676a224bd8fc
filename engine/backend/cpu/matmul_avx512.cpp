// matmul_avx512.cpp — AVX-512 (F/BW/VL) vector primitives for the kernels in matmul_simd.inl.
// 32 zmm registers allow a 4-row x 6-token GEMM tile (24 accumulators) and a 4-row x 4-token
// GEMV tile.
// GCC 12 reports its own _mm512_undefined_* placeholders in the AVX-512 intrinsics headers as
// "(maybe) used uninitialized" once they are inlined (GCC bug 105593); the warning is spurious.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/hsum_avx512.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/prefetch.h"

namespace llmwb::cpu::kernels {
namespace avx512 {

struct V {
  using reg = __m512;
  static constexpr int W = 16;
  static constexpr int kGemvRows = 4;
  static constexpr int kGemvTokens = 4;
  // The gemm tile: 4 x 6 accumulators and the 4 weight vectors of a k-step in registers, the
  // 6 x vectors streamed; per k-step 10 loads feed 24 FMAs. (3 x 8 and 2 x 12 measured
  // slower here.)
  static constexpr int kGemmRows = 4;
  static constexpr int kGemmTokens = 6;
  // A gemm row block: at most 1 MiB of packed f32 weights (half the 2 MiB L2) and at most
  // kGemmBlockRows rows, so that its lane sums (32 x 6 x 64 B = 12 KiB) and one x chunk
  // (6 x kGemmKc floats, 24 KiB) stay in the 48 KiB L1. Tuned on a Xeon (Sapphire Rapids
  // class), one thread, 2048x2048 f16 x 64 tokens, best of 50 on a busy machine: 32 rows /
  // 1024 columns 68-70% of peak FMA; 48 / 512 (the previous choice) 65-66%; 16-24 / 1024
  // 67%; 32 / 2048 60-63%; 48 / 256 58-59%; 96 / 128 55%.
  static constexpr int64_t kGemmBlockFloats = 256 * 1024;
  static constexpr int64_t kGemmBlockRows = 32;
  static constexpr int64_t kGemmKc = 1024;
  // The next row block is prefetched into L2 while at most this many bytes of x are still to
  // stream through it in the current block's sweep (matmul_simd.inl, gemm_dt).
  static constexpr int64_t kGemmPrefetchXBytes = 1 << 20;

  static reg zero() { return _mm512_setzero_ps(); }
  static reg load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, reg v) { _mm512_storeu_ps(p, v); }
  static reg set1(float f) { return _mm512_set1_ps(f); }
  static reg fma(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
  static reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
  // The horizontal sum, a fixed tree: lanes paired at distance 8, then 4, 2, 1 (the tree of
  // GCC's _mm512_reduce_add_ps, written out so that every compiler sums alike and hsum_n
  // can reproduce it exactly).
  static float hsum(reg v) {
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    const __m128 d = _mm_add_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_add_ss(d, _mm_movehdup_ps(d)));
  }
  // out[i] = hsum(vector i of v) for n vectors stored one after another, bitwise as hsum
  // gives them, eight at a time (hsum_avx512.h).
  static void hsum_n(const float* v, int n, float* out) {
    int g = 0;
    for (; g + 8 <= n; g += 8) {
      reg x[8];
      for (int i = 0; i < 8; ++i) x[i] = load(v + (g + i) * W);
      _mm256_storeu_ps(out + g, hsum8_avx512(x));
    }
    for (; g < n; ++g) out[g] = hsum(load(v + g * W));
  }
  static reg load_f16(const uint8_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  // bfloat16 is the top half of a float: widen and shift.
  static reg load_bf16(const uint8_t* p) {
    const __m512i u = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(u, 16));
  }
};

#include "backend/cpu/matmul_simd.inl"

}  // namespace avx512

// The gemv reads each weight row once for all tokens too (its row tile stays in L1 while the
// token tiles pass), so the packing gemm only pays from about this many tokens on (measured
// at 2048 x 2048, f32 and f16 weights, one thread). Both give bitwise the same y.
constexpr int kGemmMinTokens = 20;

const KernelSet& avx512_kernels() {
  static constexpr KernelSet k = {"avx512", &avx512::handles, &avx512::gemv, &avx512::gemm,
                                  &avx512::gemm_scratch_floats, &avx512::pack_x,
                                  &avx512::gemm_xp_floats, avx512::V::kGemmTokens, avx512::V::kGemmRows, kGemmMinTokens,
                                  avx512::V::kGemmBlockFloats};
  return k;
}

}  // namespace llmwb::cpu::kernels
