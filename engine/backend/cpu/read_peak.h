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
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/matmul.h"
#include "backend/cpu/thread_pool.h"

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

// Floats per unit of a thread's read share: 8 streams x 256 bytes, so every pattern reads every
// float of the share and the shares start on 64-byte boundaries.
constexpr int64_t kReadUnitFloats = 512;

// The whole units thread ith of nth reads of an n-float buffer split evenly (each thread's
// first-touched part): floats [begin, end), both multiples of kReadUnitFloats.
struct ReadShare {
  int64_t begin = 0, end = 0;
};
ReadShare read_share(int64_t n, int ith, int nth);

// The bytes of a buffer to stream through: 512 MiB, or twice the last-level cache where that is
// bigger (a server's L3 can hold most of 512 MiB, and a pass would partly read it instead of
// memory), at most an eighth of the machine's memory (the roofline allocates three).
uint64_t default_read_buffer_bytes();

// One read pass at a time over a buffer of its own (2 MiB pages, each thread's share
// first-touched by it), for measuring a kernel against the read rate right beside it: on a guest
// whose host moves the memory's rate within seconds, a ceiling measured once and a kernel
// measured a minute later differ by the drift (`roofline --kernels`' paired shares, `bench
// --read`).
class ReadProbe {
 public:
  // bytes: the buffer (far above the last-level cache); pattern: as read_floats. Throws
  // llmwb::Error naming `flag` (the option that asked for it) when the buffer cannot be
  // allocated.
  ReadProbe(ThreadPool& pool, uint64_t bytes, const ReadPattern& pattern, SimdLevel level, const std::string& flag);
  ~ReadProbe();
  ReadProbe(const ReadProbe&) = delete;
  ReadProbe& operator=(const ReadProbe&) = delete;
  // `passes` passes with the pattern on every thread of the pool; the best one's GB/s (1e9
  // bytes). Checks the sums. More than one pass keeps a pass the host stalled (a vCPU
  // descheduled for a while reads at a fraction of the rate) from standing for the moment.
  double gbps(int passes = 1);
  // Sets the pattern to the fastest of read_patterns() (best of two passes each); returns its name.
  std::string pick_best_pattern();

 private:
  double one_pass();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

namespace kernels {
double read_floats_avx2(int streams, int64_t prefetch_bytes, const float* x, int64_t n);
double read_floats_avx512(int streams, int64_t prefetch_bytes, const float* x, int64_t n);
}  // namespace kernels

}  // namespace llmwb::cpu
