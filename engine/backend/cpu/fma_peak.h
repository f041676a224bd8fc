// fma_peak.h — the machine's peak fp32 multiply-add rate, the compute ceiling of a roofline.
#pragma once

#include <cstdint>

#include "backend/cpu/matmul.h"

namespace llmwb::cpu {

// Runs `iters` iterations of an unrolled loop of independent fused multiply-adds at `level`
// on the calling thread and returns the floating-point operations done (2 per lane per FMA).
// Enough independent accumulators hide the FMA latency, so the loop runs at the core's FMA
// throughput; nothing touches memory.
double fma_loop(SimdLevel level, int64_t iters);

// GFLOP/s of `threads` threads each running fma_loop at `level` at once (about 0.2 s a
// repetition), best of `reps`: the machine's compute ceiling, measured (llmwb-cli roofline,
// and bench --peak beside each test).
double measure_peak_fma(int threads, SimdLevel level, int reps);

namespace kernels {
double fma_loop_avx2(int64_t iters);
double fma_loop_avx512(int64_t iters);
}  // namespace kernels

}  // namespace llmwb::cpu
