// fpanel.cpp — builds the 16-row panels of float weights (fpanel.h) and splits panel_matmul
// across the threads (the kernels are in fpanel_avx512.cpp).
#include "backend/cpu/fpanel.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>

#include "backend/cpu/fpanel_kernels.h"
#include "backend/cpu/matmul.h"
#include "backend/huge_page_allocator.h"
#include "llmwb/errors.h"

namespace llmwb::cpu {

namespace {

int64_t elem_bytes(DType t) { return t == DType::F32 ? 4 : 2; }

float* aligned_scratch(int64_t floats) {
  thread_local HugeFloatVector scratch;
  return grow_aligned(scratch, static_cast<size_t>(floats));
}

}  // namespace

bool panel_dtype(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

bool float_panels_enabled() {
  const char* env = std::getenv("LLMWB_FLOAT_PANELS");
  return !(env && std::string(env) == "0");
}

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
  return a;
}

int64_t grain_of(const FloatPanels& W, int64_t n_tokens) {
  return std::max<int64_t>(1, kMinMacsPerChunk / std::max<int64_t>(1, kPanelRows * W.cols * n_tokens));
}

// x packed once per call (for every matrix of a shared-input call); the buffer only grows.
const float* packed_x(ThreadPool& pool, const fpanel::Args& a) {
  thread_local HugeFloatVector xp_buffer;
  float* xp = grow_aligned(xp_buffer, static_cast<size_t>(fpanel::xp_floats(a.n_tokens, a.cols)));
  const int64_t n_tp = (a.n_tokens + fpanel::kTokenPanel - 1) / fpanel::kTokenPanel;
  pool.parallel_for(n_tp, [&](int64_t q0, int64_t q1) { fpanel::pack_x(a, q0, q1, xp); });
  return xp;
}

void run_gemm(ThreadPool& pool, const fpanel::Args& a, int64_t grain) {
  const int64_t scratch_floats = fpanel::gemm_scratch_floats(a.cols);
  // Whole panel pairs per thread where the split allows (the 2-panel tile).
  pool.parallel_for(
      a.panels, [&](int64_t p0, int64_t p1) { fpanel::gemm(a, p0, p1, aligned_scratch(scratch_floats)); },
      std::max<int64_t>(2, (grain + 1) / 2 * 2));
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
    for (const PanelOut& o : outs) {
      if (o.W->rows == 0) continue;
      const fpanel::Args a = args_of(*o.W, x, n_tokens, o.y);
      pool.parallel_for(a.panels, [&](int64_t p0, int64_t p1) { fpanel::gemv(a, p0, p1); }, grain_of(*o.W, n_tokens));
    }
    return;
  }
  const float* xp = packed_x(pool, args_of(*outs[0].W, x, n_tokens, nullptr));
  for (const PanelOut& o : outs) {
    if (o.W->rows == 0) continue;
    fpanel::Args a = args_of(*o.W, x, n_tokens, o.y);
    a.xp = xp;
    run_gemm(pool, a, grain_of(*o.W, n_tokens));
  }
}

}  // namespace llmwb::cpu
