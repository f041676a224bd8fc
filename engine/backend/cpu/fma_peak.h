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

namespace kernels {
double fma_loop_avx2(int64_t iters);
double fma_loop_avx512(int64_t iters);
}  // namespace kernels

}  // namespace llmwb::cpu
