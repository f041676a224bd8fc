// fma_peak.cpp — dispatch of fma_loop() and its scalar version.
#include "backend/cpu/fma_peak.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "backend/cpu/thread_pool.h"

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

double measure_peak_fma(int threads, SimdLevel level, int reps) {
  using Clock = std::chrono::steady_clock;
  const auto since = [](Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  ThreadPool pool(threads);
  // Calibrate: about 0.2 s per repetition.
  int64_t iters = 1 << 16;
  for (;;) {
    const auto t0 = Clock::now();
    fma_loop(level, iters);
    const double s = since(t0);
    if (s > 0.02 || iters > (int64_t{1} << 40)) {
      iters = static_cast<int64_t>(static_cast<double>(iters) * 0.2 / std::max(s, 1e-6));
      break;
    }
    iters *= 4;
  }
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    std::vector<double> flops(static_cast<size_t>(pool.size()));
    const auto t0 = Clock::now();
    pool.run([&](int ith, int) { flops[static_cast<size_t>(ith)] = fma_loop(level, iters); });
    const double s = since(t0);
    double total = 0;
    for (double f : flops) total += f;
    best = std::max(best, total / s / 1e9);
  }
  return best;
}

}  // namespace llmwb::cpu
