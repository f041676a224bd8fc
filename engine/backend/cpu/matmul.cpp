// matmul.cpp — picks the kernel for this CPU and splits the output rows across threads.
//
// Few tokens (decode): the GEMV kernel, memory-bound, each thread streaming its share of the
// weight rows once. Many tokens (prefill): x is packed into token panels once per call
// (xp[p][k][j], see matmul_simd.inl), then each thread runs the tiled GEMM over its rows.
// Splitting by output rows means no two threads ever write the same y element and each
// weight byte is read by one thread only.
#include "backend/cpu/matmul.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/matmul_kernels.h"
#include "llmwb/errors.h"

namespace llmwb::cpu {

namespace {

SimdLevel detect_best_level() {
  __builtin_cpu_init();
  // __builtin_cpu_supports also checks that the OS saves the wider registers (XCR0).
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("f16c");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  return avx512 ? SimdLevel::Avx512 : avx2 ? SimdLevel::Avx2 : SimdLevel::Scalar;
}

SimdLevel best_level() {
  static const SimdLevel best = detect_best_level();
  return best;
}

SimdLevel lower(SimdLevel a, SimdLevel b) { return static_cast<int>(a) < static_cast<int>(b) ? a : b; }

SimdLevel initial_level() {
  SimdLevel level = best_level();
  if (const char* env = std::getenv("LLMWB_SIMD"); env && *env) {
    const std::string v = env;
    if (v == "scalar") {
      level = SimdLevel::Scalar;
    } else if (v == "avx2") {
      level = lower(level, SimdLevel::Avx2);
    } else if (v == "avx512") {
      level = lower(level, SimdLevel::Avx512);
    } else {
      std::fprintf(stderr, "LLMWB_SIMD: unknown level '%s' (scalar, avx2, avx512); using %s\n", env,
                   simd_level_name(level));
    }
  }
  return level;
}

std::atomic<int>& level_slot() {
  static std::atomic<int> slot{static_cast<int>(initial_level())};
  return slot;
}

const kernels::KernelSet& kernel_set(SimdLevel level) {
  switch (level) {
    case SimdLevel::Avx512: return kernels::avx512_kernels();
    case SimdLevel::Avx2: return kernels::avx2_kernels();
    case SimdLevel::Scalar: break;
  }
  return kernels::scalar_kernels();
}

// Below this many multiply-adds a chunk is not worth waking another thread for.
constexpr int64_t kMinMacsPerChunk = 1 << 16;

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// xp[p][k][j] = x[p*P + j][k], zero for tokens past the end, for panels [p0, p1).
void pack_panels(const float* x, int64_t n_tokens, int64_t K, int P, int64_t p0, int64_t p1, float* xp) {
  for (int64_t p = p0; p < p1; ++p) {
    float* dst = xp + p * K * P;
    const int64_t t0 = p * P;
    const int nt = static_cast<int>(std::min<int64_t>(P, n_tokens - t0));
    if (nt < P) std::memset(dst, 0, sizeof(float) * static_cast<size_t>(K * P));
    for (int j = 0; j < nt; ++j) {
      const float* src = x + (t0 + j) * K;
      for (int64_t k = 0; k < K; ++k) dst[k * P + j] = src[k];
    }
  }
}

}  // namespace

SimdLevel simd_level() { return static_cast<SimdLevel>(level_slot().load(std::memory_order_relaxed)); }

void set_simd_level(SimdLevel level) {
  level_slot().store(static_cast<int>(lower(level, best_level())), std::memory_order_relaxed);
}

const char* simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::Scalar: return "scalar";
    case SimdLevel::Avx2: return "avx2";
    case SimdLevel::Avx512: return "avx512";
  }
  return "unknown";
}

void matmul(ThreadPool& pool, const TensorView& W, const float* x, int64_t n_tokens, float* y) {
  if (n_tokens <= 0) return;
  kernels::MatmulArgs a;
  a.dtype = W.dtype;
  a.w = W.data;
  a.rows = W.rows();
  a.cols = W.cols();
  a.w_row_bytes = dtype_row_bytes(W.dtype, a.cols);
  a.x = x;
  a.n_tokens = n_tokens;
  a.y = y;
  if (a.w == nullptr || W.nbytes < static_cast<uint64_t>(a.rows) * a.w_row_bytes) {
    throw Error(W.name, "matmul: weight data missing or shorter than its shape");
  }
  if (a.rows == 0) return;

  const kernels::KernelSet& ks = kernel_set(simd_level());
  const int64_t macs_per_row = a.cols * n_tokens;
  if (ks.gemm == nullptr || n_tokens < ks.gemm_min_tokens) {
    const int64_t grain = round_up(std::max<int64_t>(4, kMinMacsPerChunk / std::max<int64_t>(1, macs_per_row)), 4);
    pool.parallel_for(a.rows, [&](int64_t r0, int64_t r1) { ks.gemv(a, r0, r1); }, grain);
    return;
  }

  // The packed activations are rebuilt on every call; the buffer only grows, so after the
  // first prefill of the largest size there is no allocation on this path.
  thread_local std::vector<float> xp_buffer;
  const int P = ks.panel;
  const int64_t n_panels = (n_tokens + P - 1) / P;
  const size_t xp_size = static_cast<size_t>(n_panels * a.cols * P);
  if (xp_buffer.size() < xp_size) xp_buffer.resize(xp_size);
  float* xp = xp_buffer.data();
  pool.parallel_for(n_panels, [&](int64_t p0, int64_t p1) { pack_panels(x, n_tokens, a.cols, P, p0, p1, xp); });
  a.xp = xp;
  a.panel = P;

  const int64_t grain =
      round_up(std::max<int64_t>(ks.row_tile, kMinMacsPerChunk / std::max<int64_t>(1, macs_per_row)), ks.row_tile);
  pool.parallel_for(
      a.rows,
      [&](int64_t r0, int64_t r1) {
        thread_local std::vector<float> scratch;
        if (scratch.size() < static_cast<size_t>(ks.gemm_scratch_floats)) {
          scratch.resize(static_cast<size_t>(ks.gemm_scratch_floats));
        }
        ks.gemm(a, r0, r1, scratch.data());
      },
      grain);
}

void matmul_reference(const TensorView& W, const float* x, int64_t n_tokens, float* y) {
  const int64_t N = W.rows(), K = W.cols();
  std::vector<float> row(static_cast<size_t>(K));
  for (int64_t o = 0; o < N; ++o) {
    dequantize_row(W.dtype, W.row(o), row.data(), K);
    for (int64_t t = 0; t < n_tokens; ++t) {
      const float* xt = x + t * K;
      double s = 0.0;
      for (int64_t k = 0; k < K; ++k) s += static_cast<double>(row[static_cast<size_t>(k)]) * xt[k];
      y[t * N + o] = static_cast<float>(s);
    }
  }
}

}  // namespace llmwb::cpu
