// qmatmul_avx512vnni.cpp — AVX-512 VNNI integer dot products (vpdpbusd on ymm, AVX512VL) for
// qmatmul_simd.inl, two rows per zmm instruction. 32 vector registers: 4-row x 4-token tiles
// for many tokens.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"   // GCC bug 105593, see matmul_avx512.cpp
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/prefetch.h"
#include "backend/cpu/qmatmul_kernels.h"

namespace llmwb::cpu::qkernels {
namespace avx512vnni {

struct V {
  static constexpr int kGemvRows = 4;
  static constexpr int kRows = 4;
  static constexpr int kTokens = 4;
  // One instruction: four u8 x s8 products summed into each int32 lane.
  static __m256i dot(__m256i u, __m256i s) { return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s); }
  // Two rows per zmm instruction (tile_row_pairs in qmatmul_simd.inl).
  static constexpr bool kRowPairs = true;
  static __m512i dot512(__m512i u, __m512i s) { return _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, s); }
};

#include "backend/cpu/qmatmul_simd.inl"

}  // namespace avx512vnni

const QKernelSet& avx512vnni_qkernels() {
  static constexpr QKernelSet k = {"avx512vnni",           &avx512vnni::rows,
                                    4,                      &packed_rows_avx512vnni,
                                    "avx512vnni-x16",       &quantize_blocks_avx512,
                                    kAvx512DecodeTiles,     true};
  return k;
}

}  // namespace llmwb::cpu::qkernels
