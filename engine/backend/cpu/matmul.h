// matmul.h — CPU linear layers over weights of any supported dtype, in place in memory.
//
// y[t][o] = sum_i W[o][i] * x[t][i]  for t < n_tokens, o < W.rows(), i < W.cols()
// W is a TensorView of any dtype, never converted as a whole: rows are decoded into registers
// (or a small per-thread tile) as they are used.
// n_tokens == 1 is the memory-bound decode GEMV; larger n_tokens is the prefill GEMM, tiled
// so that each weight tile is reused across many tokens.
// Batch-invariant: at a given SIMD level, y[t] is bitwise the same whatever n_tokens, the
// position of token t in x and the pool's thread count (so batched = sequential decoding).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "backend/cpu/thread_pool.h"
#include "format/tensor.h"

namespace llmwb {
struct TuningConfig;
}

namespace llmwb::cpu {

enum class SimdLevel { Scalar, Avx2, Avx512 };

// The best level this CPU supports (cpuid), unless lowered by set_simd_level / LLMWB_SIMD env
// ("scalar", "avx2", "avx512").
SimdLevel simd_level();
void set_simd_level(SimdLevel level);
// The best level this CPU supports (cpuid), whatever the current one.
SimdLevel best_simd_level();   // for tests: compare every path with the scalar one
const char* simd_level_name(SimdLevel level);
// The best level, lowered to `name` (TuningConfig::simd: "" = the best, "scalar", "avx2",
// "avx512"; a level above the CPU's stays the CPU's).
SimdLevel simd_level_at_most(const std::string& name);

// How far ahead (bytes) the decode GEMVs prefetch each weight stream into L1, past the 4 KiB
// page ends where the hardware prefetchers stop; 0: no software prefetch. One distance for the
// repacked quantized tiles, one for the float panels. Process-wide, like the SIMD level. The
// default is picked per microarchitecture (default_decode_prefetch); TuningConfig::
// decode_prefetch / LLMWB_DECODE_PREFETCH set both. Every setting computes the same bits.
struct DecodePrefetch {
  int64_t quantized = 0, floats = 1024;   // default_decode_prefetch picks per microarchitecture
  bool operator==(const DecodePrefetch&) const = default;
};
DecodePrefetch decode_prefetch();
void set_decode_prefetch(DecodePrefetch p);
DecodePrefetch default_decode_prefetch();
// TuningConfig::decode_prefetch ("" / "auto": the default; "off": 0; a byte count: both).
DecodePrefetch decode_prefetch_from(const std::string& setting);

// How many 16-row tiles each thread's one-token GEMV over repacked quantized weights reads side
// by side: that many sequential weight streams per thread (`roofline` measures the read rate of
// 1, 4 and 8). More streams share each activation block's broadcasts across more tiles; fewer
// keep the memory side on one stream. 1, 2 or 4 (the AVX2 kernels read at most 2). Process-
// wide, like decode_prefetch; the default per microarchitecture (default_decode_streams);
// TuningConfig::decode_streams / LLMWB_DECODE_STREAMS. Every setting computes the same bits.
int decode_streams();
void set_decode_streams(int n);
int default_decode_streams();
// TuningConfig::decode_streams ("" / "auto": the default; else "1", "2" or "4").
int decode_streams_from(const std::string& setting);

// Applies an engine's process-wide CPU switches (simd lowers the level where set;
// decode_prefetch, decode_streams), as each runner does when it is made.
void apply_process_tuning(const TuningConfig& tuning);

// Below this many multiply-adds a chunk of a matmul is not worth waking another thread for.
constexpr int64_t kMinMacsPerChunk = 1 << 16;
// Passes of at most this many tokens (decode, speculative verification) stream their weights;
// their row loops run balanced (ThreadPool::parallel_for_balanced) in chunks of at least
// kBalancedRows rows (eight 16-row tiles or panels: two of the one-token GEMVs' 4-stream groups).
constexpr int64_t kBalancedMaxTokens = 8;
constexpr int64_t kBalancedRows = 128;
// v rounded up to a multiple of m (m > 0): chunk sizes in whole tiles.
constexpr int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
// The matrices of one shared-input call side by side in one index space (rows or panels):
// matrix i holds [off[i], off[i + 1]), of which its first valid(i) items are real, the rest
// padding to whole tiles. Runs fn(i, lo, hi) for the real items of [q0, q1) in each matrix, lo
// and hi counted from the matrix's start: one parallel loop covers them all.
template <class Valid, class Fn>
void for_each_side_by_side(int64_t q0, int64_t q1, const int64_t* off, size_t n, const Valid& valid, const Fn& fn) {
  for (size_t i = 0; i < n; ++i) {
    const int64_t lo = std::max(q0, off[i]) - off[i];
    const int64_t hi = std::min({q1 - off[i], off[i + 1] - off[i], static_cast<int64_t>(valid(i))});
    if (lo < hi) fn(i, lo, hi);
  }
}

void matmul(ThreadPool& pool, const TensorView& W, const float* x, int64_t n_tokens, float* y);

// Reference: the plainest loop, double accumulation. Tests compare against it.
void matmul_reference(const TensorView& W, const float* x, int64_t n_tokens, float* y);

}  // namespace llmwb::cpu
