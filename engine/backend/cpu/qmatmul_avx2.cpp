// qmatmul_avx2.cpp — AVX2 integer dot products (vpmaddubsw + vpmaddwd) for qmatmul_simd.inl.
// 16 ymm registers: a 2-row x 4-token tile for many tokens, 4 rows x 1 token for decode.
#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/prefetch.h"
#include "backend/cpu/qmatmul_kernels.h"

namespace llmwb::cpu::qkernels {
namespace avx2 {

struct V {
  static constexpr int kGemvRows = 4;
  static constexpr int kRows = 2;
  static constexpr int kTokens = 4;
  static constexpr bool kRowPairs = false;   // no zmm
  // u8 x s8 pairs summed to int16 (cannot saturate for |u| <= 128, |s| <= 127), then pairs
  // of those to int32.
  static __m256i dot(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
  }
};

#include "backend/cpu/qmatmul_simd.inl"

}  // namespace avx2

const QKernelSet& avx2_qkernels() {
  static constexpr QKernelSet k = {"avx2",          &avx2::rows,           4,
                                    &packed_rows_avx2, "avx2-x16",            &quantize_blocks_avx2,
                                    kAvx2DecodeTiles,  true};
  return k;
}

}  // namespace llmwb::cpu::qkernels
