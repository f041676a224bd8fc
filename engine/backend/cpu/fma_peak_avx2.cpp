// fma_peak_avx2.cpp — the FMA throughput loop for AVX2. 16 ymm registers: 12 accumulators + 2 constants.
#include <immintrin.h>

#include "backend/cpu/fma_peak.h"

namespace llmwb::cpu::kernels {

double fma_loop_avx2(int64_t iters) {
  constexpr int kAcc = 12;
  __m256 acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_set1_ps(1.0f + 0.001f * static_cast<float>(i));
  // acc = acc * a + b converges to b / (1 - a): no overflow, no subnormals, however long it runs.
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  __m256 s = acc[0];
  for (int i = 1; i < kAcc; ++i) s = _mm256_add_ps(s, acc[i]);
  alignas(64) float out[8];
  _mm256_store_ps(out, s);
  volatile float sink = out[0];
  (void)sink;
  return 2.0 * 8 * kAcc * static_cast<double>(iters);
}

}  // namespace llmwb::cpu::kernels
