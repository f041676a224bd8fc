// fpanel.cpp — builds the 16-row panels of float weights (fpanel.h) and splits panel_matmul
// across the threads (the kernels are in fpanel_avx512.cpp).
#include "backend/cpu/fpanel.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/fpanel_kernels.h"
#include "backend/cpu/matmul.h"
#include "memory/huge_page_allocator.h"
#include "llmwb/errors.h"
#include "llmwb/tuning_config.h"

namespace llmwb::cpu {

namespace {

int64_t elem_bytes(DType t) { return t == DType::F32 ? 4 : 2; }

float* aligned_scratch(int64_t floats) {
  thread_local HugeFloatVector scratch;
  return grow_aligned(scratch, static_cast<size_t>(floats));
}

}  // namespace

bool panel_dtype(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

bool float_panels_enabled() { return TuningConfig::from_environment().float_panels; }

bool cpu_has_panel_kernels() { return best_simd_level() == SimdLevel::Avx512; }

bool panel_kernels_active() { return simd_level() == SimdLevel::Avx512; }

int panel_gemm_min_tokens() { return fpanel::kTokenPanel; }

FloatPanels panel_layout(const TensorView& W) {
  if (!panel_dtype(W.dtype))
    throw Error(W.name, std::string("no 16-row panel layout for ") + dtype_name(W.dtype) + " weights");
  if (W.data == nullptr || W.nbytes < static_cast<uint64_t>(W.rows()) * dtype_row_bytes(W.dtype, W.cols()))
    throw Error(W.name, "matmul: weight data missing or shorter than its shape");
  FloatPanels p;
  p.dtype = W.dtype;
  p.rows = W.rows();
  p.cols = W.cols();
  p.panels = (p.rows + kPanelRows - 1) / kPanelRows;
  p.panel_bytes = static_cast<uint64_t>(kPanelRows * p.cols * elem_bytes(W.dtype));
  return p;
}

void pack_panels_into(const TensorView& W, FloatPanels& p, uint8_t* dst, ThreadPool& pool, int64_t q_begin,
                      int64_t q_end) {
  const int64_t K = p.cols;
  const uint64_t rb = dtype_row_bytes(W.dtype, K);
  if (q_end < 0) q_end = p.panels;
  // The panels are only read where AVX-512 runs; the gathering copy needs it too.
  if (!cpu_has_panel_kernels()) throw Error(W.name, "the 16-row panel layout needs AVX-512");
  pool.parallel_for(q_end - q_begin, [&](int64_t i0, int64_t i1) {
    fpanel::pack_panels(W.dtype, W.data, rb, p.rows, K, q_begin + i0, q_begin + i1, dst, p.panel_bytes);
  });
  p.data = dst;
}

FloatPanels pack_panels(const TensorView& W, ThreadPool& pool) {
  FloatPanels p = panel_layout(W);
  p.storage = PageBuffer(std::max<uint64_t>(p.bytes(), 64), /*huge_pages=*/true);
  pack_panels_into(W, p, p.storage.data(), pool);
  return p;
}

float panel_element(const FloatPanels& p, int64_t r, int64_t k) {
  const uint8_t* e = p.data + (r / kPanelRows) * p.panel_bytes;
  const int64_t i = k * kPanelRows + r % kPanelRows;
  if (p.dtype == DType::F32) {
    float f;
    std::memcpy(&f, e + i * 4, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, e + i * 2, 2);
  return p.dtype == DType::F16 ? fp16_to_fp32(h) : bf16_to_fp32(h);
}

void panel_row(const FloatPanels& p, int64_t r, float* out) {
  for (int64_t k = 0; k < p.cols; ++k) out[k] = panel_element(p, r, k);
}

namespace {

fpanel::Args args_of(const FloatPanels& W, const float* x, int64_t n_tokens, float* y) {
  fpanel::Args a;
  a.dtype = W.dtype;
  a.w = W.data;
  a.panel_bytes = W.panel_bytes;
  a.rows = W.rows;
  a.cols = W.cols;
  a.panels = W.panels;
  a.x = x;
  a.n_tokens = n_tokens;
  a.y = y;
  a.prefetch = decode_prefetch().floats;
  return a;
}

int64_t grain_of_panels(int64_t cols, int64_t n_tokens) {
  return std::max<int64_t>(1, kMinMacsPerChunk / std::max<int64_t>(1, kPanelRows * cols * n_tokens));
}
int64_t grain_of(const FloatPanels& W, int64_t n_tokens) { return grain_of_panels(W.cols, n_tokens); }

// The x buffer of a call (packed once for every matrix of a shared-input call); only grows.
float* packed_x_buffer(const fpanel::Args& a) {
  thread_local HugeFloatVector xp_buffer;
  return grow_aligned(xp_buffer, static_cast<size_t>(fpanel::xp_floats(a.n_tokens, a.cols)));
}

constexpr size_t kMaxSharedInput = 4;   // matrices sharing x in one parallel region

// Smallest panel range a thread takes at a time (four 2-panel tiles), and the ranges at the end
// of a region: one tile wide, so that the thread which finishes first waits at most one tile.
constexpr int64_t kRangePanels = 8;
constexpr int64_t kTailPanels = 2;

// Waits for the token panels other threads are still packing: spins, then also yields (with
// more threads than cores, the one we wait for may be queued behind us on this core).
void wait_packed(const std::atomic<int64_t>& packed, int64_t n_tp) {
  for (int i = 0; packed.load(std::memory_order_acquire) < n_tp; ++i) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (i >= 1024) std::this_thread::yield();
  }
}

// The GEMMs of one call (Q, K and V, or gate and up, share x) as one parallel region: first x
// is packed, token panel by token panel, by whichever thread takes the next one; then panel
// ranges of every matrix are handed out on demand from an atomic counter, the last few one
// tile wide. A static split gave each thread half of each matrix, so a thread the host
// descheduled for a while (vCPU steal on a shared machine) held the other at every matrix's
// barrier; packing x in a region of its own cost a second start and barrier per call. Each
// range is whole panel pairs (the 2-panel tile) and at least the grain's work; outputs are
// independent of how rows are split, so results are too.
void run_gemms(ThreadPool& pool, std::span<const fpanel::Args> as, const fpanel::Args& pack, float* xp) {
  struct Range {
    size_t m;
    int64_t p0, p1;
  };
  thread_local std::vector<Range> ranges;
  ranges.clear();
  int64_t scratch_floats = 0;
  for (size_t m = 0; m < as.size(); ++m) {
    const fpanel::Args& a = as[m];
    const int64_t grain = grain_of_panels(a.cols, a.n_tokens);
    const int64_t step = std::max<int64_t>(kRangePanels, (grain + 1) / 2 * 2);
    for (int64_t p0 = 0; p0 < a.panels; p0 += step) ranges.push_back({m, p0, std::min(a.panels, p0 + step)});
    scratch_floats = std::max(scratch_floats, fpanel::gemm_scratch_floats(a.cols));
  }
  // The tail: the last ranges (one per thread) split into tile-wide ones, in the same order.
  const size_t tail = std::min(ranges.size(), static_cast<size_t>(pool.size()));
  if (pool.size() > 1 && tail > 0) {
    thread_local std::vector<Range> split;
    split.clear();
    for (size_t i = ranges.size() - tail; i < ranges.size(); ++i)
      for (int64_t p0 = ranges[i].p0; p0 < ranges[i].p1; p0 += kTailPanels)
        split.push_back({ranges[i].m, p0, std::min(ranges[i].p1, p0 + kTailPanels)});
    ranges.resize(ranges.size() - tail);
    ranges.insert(ranges.end(), split.begin(), split.end());
  }
  const int64_t n_tp = (pack.n_tokens + fpanel::kTokenPanel - 1) / fpanel::kTokenPanel;
  std::atomic<int64_t> next_pack{0}, packed{0};
  std::atomic<size_t> next{0};
  const std::vector<Range>& rs = ranges;   // the caller's list (thread_local: the workers have their own)
  auto work = [&](int, int) {
    for (int64_t q = next_pack.fetch_add(1, std::memory_order_relaxed); q < n_tp;
         q = next_pack.fetch_add(1, std::memory_order_relaxed)) {
      fpanel::pack_x(pack, q, q + 1, xp);
      packed.fetch_add(1, std::memory_order_release);
    }
    // Every token panel is taken; wait for the ones still being packed by other threads.
    wait_packed(packed, n_tp);
    float* scratch = aligned_scratch(scratch_floats);
    // Each range is taken one ahead, so that its first chunk of weights is on its way into L2
    // while the one before finishes (a range is a few blocks: unprefetched, its first chunk
    // came from memory on demand).
    for (size_t i = next.fetch_add(1, std::memory_order_relaxed); i < rs.size();) {
      const size_t j = next.fetch_add(1, std::memory_order_relaxed);
      fpanel::NextRange after;
      if (j < rs.size()) after = {&as[rs[j].m], rs[j].p0, rs[j].p1};
      fpanel::gemm(as[rs[i].m], rs[i].p0, rs[i].p1, scratch, after);
      i = j;
    }
  };
  if (pool.size() <= 1) work(0, 1);
  else pool.run(work);
}

}  // namespace

void panel_matmul(ThreadPool& pool, const FloatPanels& W, const float* x, int64_t n_tokens, float* y) {
  const PanelOut out{&W, y};
  panel_matmul_multi(pool, std::span<const PanelOut>(&out, 1), x, n_tokens);
}

void panel_matmul_multi(ThreadPool& pool, std::span<const PanelOut> outs, const float* x, int64_t n_tokens) {
  if (n_tokens <= 0 || outs.empty()) return;
  if (!panel_kernels_active()) throw Error("matmul", "the 16-row panel kernels need AVX-512");
  for (const PanelOut& o : outs) {
    if (o.W->cols != outs[0].W->cols) throw Error("matmul", "shared-input matrices differ in their columns");
  }
  if (n_tokens < panel_gemm_min_tokens()) {
    // Few tokens (decode, a verify pass, a small batch): one parallel region for every matrix
    // sharing x (Q, K and V; gate and up), their panels side by side in one index space, each
    // padded to whole GEMV tiles so that a chunk starts a tile in every matrix it touches. One
    // region a call rather than one a matrix: the small K and V projections no longer cost a
    // start and a barrier each. Outputs do not depend on the split.
    thread_local std::vector<fpanel::Args> gs;
    thread_local std::vector<int64_t> off;
    gs.clear();
    off.assign(1, 0);
    int64_t grain = 1;
    for (const PanelOut& o : outs) {
      if (o.W->rows == 0) continue;
      gs.push_back(args_of(*o.W, x, n_tokens, o.y));
      off.push_back(off.back() + round_up(o.W->panels, fpanel::kGemvPanels));
      grain = std::max(grain, grain_of(*o.W, n_tokens));
    }
    if (gs.empty()) return;
    // Worker threads read the caller's thread_local vectors through these.
    const fpanel::Args* ap = gs.data();
    const int64_t* op = off.data();
    const size_t n = gs.size();
    auto body = [&](int64_t q0, int64_t q1) {
      for_each_side_by_side(q0, q1, op, n, [&](size_t i) { return ap[i].panels; },
                            [&](size_t i, int64_t lo, int64_t hi) { fpanel::gemv(ap[i], lo, hi); });
    };
    if (n_tokens <= kBalancedMaxTokens)
      pool.parallel_for_balanced(op[n], body,
                                 round_up(std::max(grain, kBalancedRows / kPanelRows), fpanel::kGemvPanels));
    else
      pool.parallel_for(op[n], body, round_up(grain, fpanel::kGemvPanels));
    return;
  }
  const fpanel::Args pack = args_of(*outs[0].W, x, n_tokens, nullptr);
  float* xp = packed_x_buffer(pack);
  fpanel::Args as[kMaxSharedInput];
  size_t n = 0;
  bool packed = false;   // the first region packs x; later ones (over kMaxSharedInput) reuse it
  auto flush = [&] {
    fpanel::Args no_pack = pack;
    no_pack.n_tokens = 0;
    run_gemms(pool, std::span<const fpanel::Args>(as, n), packed ? no_pack : pack, xp);
    packed = true;
    n = 0;
  };
  for (const PanelOut& o : outs) {
    if (o.W->rows == 0) continue;
    if (n == kMaxSharedInput) flush();   // more matrices than one region takes: run what is gathered
    as[n] = args_of(*o.W, x, n_tokens, o.y);
    as[n++].xp = xp;
  }
  if (n > 0) flush();
}

}  // namespace llmwb::cpu
