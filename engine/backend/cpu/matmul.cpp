// matmul.cpp — picks the kernel for this CPU and splits the output rows across threads.
//
// Few tokens (decode): the GEMV kernel, memory-bound, each thread streaming its share of the
// weight rows once. Many tokens (prefill): the blocked GEMM kernel over the same rows. Both
// sum every output in one fixed order (matmul_simd.inl), so a token's result is bitwise the
// same alone or in any batch. Splitting by output rows means no two threads ever write the
// same y element and each weight byte is read by one thread only; which thread computes a
// row does not change its bits either.
// The float kernels take F32 / F16 / BF16 weights; every quantized type goes to qmatmul
// (integer dot products) before any of this.
#include "backend/cpu/matmul.h"

#include <cpuid.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/cpu/matmul_kernels.h"
#include "memory/huge_page_allocator.h"
#include "backend/cpu/qmatmul.h"
#include "llmwb/errors.h"
#include "llmwb/tuning_config.h"

namespace llmwb::cpu {

namespace {

SimdLevel detect_best_level() {
  __builtin_cpu_init();
  // __builtin_cpu_supports also checks that the OS saves the wider registers (XCR0).
  // F16C through cpuid: clang 14's __builtin_cpu_supports does not know "f16c".
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  return avx512 ? SimdLevel::Avx512 : avx2 ? SimdLevel::Avx2 : SimdLevel::Scalar;
}

SimdLevel best_level() {
  static const SimdLevel best = detect_best_level();
  return best;
}

SimdLevel lower(SimdLevel a, SimdLevel b) { return static_cast<int>(a) < static_cast<int>(b) ? a : b; }

// TuningConfig::from_environment().simd (LLMWB_SIMD) lowers the start level; an engine's own
// TuningConfig lowers it again when its CPU runner is made.
SimdLevel initial_level() { return simd_level_at_most(TuningConfig::from_environment().simd); }

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

// The gemm kernel's per-thread scratch, which only grows, so that after the first call of the
// largest shape there is no allocation on this path.
float* thread_scratch(int64_t floats) {
  thread_local HugeFloatVector scratch;
  if (scratch.size() < static_cast<size_t>(floats)) scratch.resize(static_cast<size_t>(floats));
  return scratch.data();
}

}  // namespace

SimdLevel best_simd_level() { return best_level(); }

namespace {
// The AMD microarchitectures whose decode defaults differ, told apart by cpuid's family (a KVM
// guest's "AMD EPYC" names neither): 25 with AVX-512 is Zen 4 (Genoa, Raphael), 26 Zen 5
// (Turin, Granite Ridge).
enum class AmdCore { None, Zen4, Zen5 };

AmdCore amd_core() {
  static const AmdCore core = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return AmdCore::None;
    const bool amd = ebx == 0x68747541 && edx == 0x69746e65 && ecx == 0x444d4163;   // "AuthenticAMD"
    if (!amd || !__get_cpuid(1, &eax, &ebx, &ecx, &edx) || best_level() != SimdLevel::Avx512) return AmdCore::None;
    const unsigned base = (eax >> 8) & 0xF;
    const unsigned family = base + (base == 0xF ? (eax >> 20) & 0xFF : 0);
    return family == 0x19 ? AmdCore::Zen4 : family == 0x1A ? AmdCore::Zen5 : AmdCore::None;
  }();
  return core;
}
}  // namespace

DecodePrefetch default_decode_prefetch() {
  // Measured per microarchitecture with `roofline --kernels --prefetch-ab` and `bench --read`
  // A/Bs (docs/BENCHMARKS.md, "Decode prefetch per microarchitecture", "Quantized decode with a
  // working prefetch", "Decode prefetch and streams on Zen 5"). The float panels' GEMV: on Intel
  // Xeon and AMD Zen 5 every line 1 KiB ahead into L1, past the 4 KiB page ends where the
  // hardware prefetchers stop; on AMD Zen 4 none (whole F16 decodes 1.29x). The repacked
  // quantized tiles: on AMD Zen 4 the next two lines (128 bytes ahead: whole decodes Q4_0 1.08x,
  // Q8_0 1.07x, Q5_K 1.04x, Q6_K 1.05x, Q4_K_M 1.02x over none; 1 KiB slower than none); on AMD
  // Zen 5 4 KiB ahead, a page (the GEMVs alone Q4_K 1.04-1.07x, Q5_K 1.06-1.07x, Q6_K
  // 1.04-1.05x over 1 KiB, Q4_0 / Q8_0 even; 1 KiB was 1.02-1.18x over none; 128 B 0.83-0.87x
  // for the k-quants at one stream), where the panels keep 1 KiB (4 KiB: F16 0.95-0.97x, BF16
  // 0.94x); on Intel none, as its figures were measured (the tiles' prefetches were compiled
  // away before prefetch.h).
  DecodePrefetch d;
  switch (amd_core()) {
    case AmdCore::Zen4: d.quantized = 128; d.floats = 0; break;
    case AmdCore::Zen5: d.quantized = 4096; d.floats = 1024; break;
    case AmdCore::None: d.quantized = 0; d.floats = 1024; break;
  }
  return d;
}

int default_decode_streams() {
  // Measured with `bench --read` A/Bs (docs/BENCHMARKS.md, "Decode streams per
  // microarchitecture", "Decode prefetch and streams on Zen 5"). AMD Zen 4 and Zen 5: one tile
  // at a time, a single stream per thread (Zen 4 whole decodes 1.06-1.16x for Q4_0, Q8_0, Q5_K
  // and Q4_K_M, Q6_K even; Zen 5, with the tiles 1 KiB ahead, Q4_0 1.14x, Q6_K 1.11x, Q4_K_M
  // 1.06x, Q5_K 1.02x, Q8_0 0.98x; 4 KiB ahead, two streams 0.86-0.92x and four 0.82-0.97x of
  // one). Elsewhere four tiles side by side, each activation block
  // broadcast once for all four (on Intel Xeon one tile read 4-8 % slower).
  return amd_core() == AmdCore::None ? 4 : 1;
}

namespace {
// Unset (-1 / 0) until the first read takes the LLMWB_* defaults; a set_* before it wins.
std::atomic<int64_t> g_prefetch_quantized{-1}, g_prefetch_floats{-1};
std::atomic<int> g_decode_streams{0};

// The decode switches' defaults from the environment, read once for all of them.
void init_decode_switches() {
  static const bool done = [] {
    const TuningConfig t = TuningConfig::from_environment();
    const DecodePrefetch d = decode_prefetch_from(t.decode_prefetch);
    int64_t unset = -1;
    g_prefetch_quantized.compare_exchange_strong(unset, d.quantized);
    unset = -1;
    g_prefetch_floats.compare_exchange_strong(unset, d.floats);
    int none = 0;
    g_decode_streams.compare_exchange_strong(none, decode_streams_from(t.decode_streams));
    return true;
  }();
  (void)done;
}
}  // namespace

DecodePrefetch decode_prefetch() {
  init_decode_switches();
  return {g_prefetch_quantized.load(std::memory_order_relaxed), g_prefetch_floats.load(std::memory_order_relaxed)};
}

void set_decode_prefetch(DecodePrefetch p) {
  g_prefetch_quantized.store(p.quantized, std::memory_order_relaxed);
  g_prefetch_floats.store(p.floats, std::memory_order_relaxed);
}

int decode_streams() {
  init_decode_switches();
  return g_decode_streams.load(std::memory_order_relaxed);
}

void set_decode_streams(int n) { g_decode_streams.store(n == 1 || n == 2 ? n : 4, std::memory_order_relaxed); }

int decode_streams_from(const std::string& setting) {
  if (setting.empty() || setting == "auto") return default_decode_streams();
  return std::stoi(setting);   // TuningConfig validated it: 1, 2 or 4
}

void apply_process_tuning(const TuningConfig& tuning) {
  if (!tuning.simd.empty()) set_simd_level(simd_level_at_most(tuning.simd));
  set_decode_prefetch(decode_prefetch_from(tuning.decode_prefetch));
  set_decode_streams(decode_streams_from(tuning.decode_streams));
}

DecodePrefetch decode_prefetch_from(const std::string& setting) {
  if (setting.empty() || setting == "auto") return default_decode_prefetch();
  const int64_t b = setting == "off" ? 0 : std::stoll(setting);   // TuningConfig validated it
  return {b, b};
}

SimdLevel simd_level() { return static_cast<SimdLevel>(level_slot().load(std::memory_order_relaxed)); }

void set_simd_level(SimdLevel level) {
  level_slot().store(static_cast<int>(lower(level, best_level())), std::memory_order_relaxed);
}

SimdLevel simd_level_at_most(const std::string& name) {
  const SimdLevel best = best_level();
  if (name == "scalar") return SimdLevel::Scalar;
  if (name == "avx2") return lower(best, SimdLevel::Avx2);
  return best;
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
  const int64_t rows = W.rows();
  a.cols = W.cols();
  a.w_row_bytes = dtype_row_bytes(W.dtype, a.cols);
  a.x = x;
  a.n_tokens = n_tokens;
  a.y = y;
  a.y_stride = rows;
  if (a.w == nullptr || W.nbytes < static_cast<uint64_t>(rows) * a.w_row_bytes) {
    throw Error(W.name, "matmul: weight data missing or shorter than its shape");
  }
  if (rows == 0) return;
  // Quantized weights (Q8_0 and Q4_0 included) take the integer-dot kernels, which quantize
  // the activations per block of 32 on the fly (qmatmul.h).
  if (qmatmul_handles(W.dtype)) {
    qmatmul(pool, W, x, n_tokens, y);
    return;
  }

  const kernels::KernelSet& ks = kernel_set(simd_level());
  const bool use_gemm = ks.gemm != nullptr && n_tokens >= ks.gemm_min_tokens;
  const int64_t macs_per_row = a.cols * n_tokens;
  const int64_t tile = use_gemm ? ks.row_tile : 4;
  const int64_t grain = round_up(std::max<int64_t>(tile, kMinMacsPerChunk / std::max<int64_t>(1, macs_per_row)), tile);
  if (!ks.handles(a.dtype)) throw Error(W.name, std::string("matmul: no CPU kernel for ") + dtype_name(a.dtype));

  if (use_gemm) {
    // x is packed once per call for all threads.
    // The buffer only grows, so after the first prefill of the largest size there is no
    // allocation on this path.
    thread_local HugeFloatVector xp_buffer;
    float* xp = grow_aligned(xp_buffer, static_cast<size_t>(ks.gemm_xp_floats(n_tokens, a.cols)));
    const int64_t n_tiles = (n_tokens + ks.gemm_token_tile - 1) / ks.gemm_token_tile;
    pool.parallel_for(n_tiles, [&](int64_t p0, int64_t p1) { ks.pack_x(a, p0, p1, xp); });
    a.xp = xp;
  }

  if (!use_gemm) {
    auto body = [&](int64_t r0, int64_t r1) { ks.gemv(a, r0, r1); };
    pool.parallel_for_balanced(rows, body, round_up(std::max(grain, kBalancedRows), tile));
  } else {
    const int64_t scratch_floats = ks.gemm_scratch_floats(a.cols);
    pool.parallel_for(
        rows, [&](int64_t r0, int64_t r1) { ks.gemm(a, r0, r1, thread_scratch(scratch_floats)); }, grain);
  }
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
