// fma_peak_avx512.cpp — the FMA throughput loop for AVX512. 32 zmm registers: 16 accumulators (two FMA ports x 4-cycle latency needs at least 8).
#include <immintrin.h>

#include "backend/cpu/fma_peak.h"

namespace llmwb::cpu::kernels {

double fma_loop_avx512(int64_t iters) {
  constexpr int kAcc = 16;
  __m512 acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_set1_ps(1.0f + 0.001f * static_cast<float>(i));
  // acc = acc * a + b converges to b / (1 - a): no overflow, no subnormals, however long it runs.
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  __m512 s = acc[0];
  for (int i = 1; i < kAcc; ++i) s = _mm512_add_ps(s, acc[i]);
  alignas(64) float out[16];
  _mm512_store_ps(out, s);
  volatile float sink = out[0];
  (void)sink;
  return 2.0 * 16 * kAcc * static_cast<double>(iters);
}

}  // namespace llmwb::cpu::kernels
