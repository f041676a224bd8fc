// read_peak.h — the machine's streaming read rate, the memory ceiling of decode (a GEMV reads
// each weight byte once and writes next to nothing).
//
// One read pattern rarely reaches what a core can pull from memory: how many lines a core keeps
// in flight depends on how many sequential streams its hardware prefetchers follow, whether
// software prefetches run ahead past the 4 KiB page ends where those prefetchers stop, and on
// the microarchitecture (the same pattern is the best on one CPU and not on another). So the
// ceiling is measured as the best of a few patterns: each thread reads its own first-touched
// share of a buffer far larger than the last-level cache, split into `streams` contiguous parts
// read side by side, 256 bytes of each part per step into independent vector accumulators
// (four per stream), with or without a prefetch of every line `prefetch_bytes` ahead into L1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/cpu/matmul.h"

namespace llmwb::cpu {

struct ReadPattern {
  int streams = 1;              // 1, 2, 4 or 8 contiguous parts per thread, read side by side
  int64_t prefetch_bytes = 0;   // 0: hardware prefetchers only; else each line this far ahead (T0)
  std::string name() const;     // "4 streams, prefetch 1 KiB"
};

// The patterns read_ceiling tries.
std::vector<ReadPattern> read_patterns();

// Sums n floats (n a multiple of 64 * p.streams, x 64-byte aligned) read with pattern
// p at `level` on the calling thread. Partial sums are flushed into a double often enough to
// stay exact for small integers (the roofline fills in 2.0f), which checks that every float
// was read.
double read_floats(SimdLevel level, const ReadPattern& p, const float* x, int64_t n);

namespace kernels {
double read_floats_avx2(int streams, int64_t prefetch_bytes, const float* x, int64_t n);
double read_floats_avx512(int streams, int64_t prefetch_bytes, const float* x, int64_t n);
}  // namespace kernels

}  // namespace llmwb::cpu
