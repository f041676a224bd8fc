// fma_peak.cpp — dispatch of fma_loop() and its scalar version.
#include "backend/cpu/fma_peak.h"

#include <cmath>

namespace llmwb::cpu {

namespace {

double fma_loop_scalar(int64_t iters) {
  constexpr int kAcc = 8;
  float acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = 1.0f + 0.001f * static_cast<float>(i);
  const float a = 0.999999f, b = 1e-7f;
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kAcc; ++i) acc[i] = acc[i] * a + b;   // a multiply and an add: no FMA unit assumed
  }
  float s = 0;
  for (float v : acc) s += v;
  // Keeps the loop alive: the result feeds a volatile store.
  volatile float sink = s;
  (void)sink;
  return 2.0 * kAcc * static_cast<double>(iters);
}

}  // namespace

double fma_loop(SimdLevel level, int64_t iters) {
  switch (level) {
    case SimdLevel::Avx512: return kernels::fma_loop_avx512(iters);
    case SimdLevel::Avx2: return kernels::fma_loop_avx2(iters);
    case SimdLevel::Scalar: break;
  }
  return fma_loop_scalar(iters);
}

}  // namespace llmwb::cpu
