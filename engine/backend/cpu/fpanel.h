// fpanel.h — float weights (F32, F16, BF16) repacked once into panels of 16 output rows, and
// the AVX-512 matmul over them (prefill GEMM and decode GEMV).
//
// Why: the in-place float kernels (matmul_simd.inl) read weight rows as they lie in the file,
// so their lanes run along k and a register tile needs RR + TT vector loads for RR x TT
// fused multiply-adds, the weight side streamed from L2 (4 vectors per 24 FMAs). Here the lanes
// run along the outputs instead: panel p holds rows 16p .. 16p + 15 column by column,
// panel[k][l] = W[16p + l][k], so one aligned vector is 16 outputs' weights at column k, and a
// GEMM tile of 2 panels x 12 tokens does 24 FMAs per 2 weight vectors (from L2) and 12
// broadcasts of x (from L1). The GotoBLAS / BLIS shape, as llama.cpp's and oneDNN's f32 GEMMs
// do it with packed weights.
//
// One summation order, whatever the batch (batch invariance): y[t][o] is one fused
// multiply-add chain over k = 0, 1, ..., K - 1 from zero, in its own lane. No kernel splits
// or reorders it, so the GEMV (few tokens, weights read from the panels) and the GEMM (many
// tokens, packed x, f16 / bf16 panels widened block by block into f32 scratch, which is exact)
// give every output bitwise the same, however many tokens a call has, where a token sits in
// it, which thread runs its panel and how the panels are blocked. Unlike the in-place kernels
// the chain has no K % 16 tail: every column is treated alike.
//
// Memory: the copy has the weights' own element type (no widening) and is built once per
// matrix by the CPU backend (RepackCache), which hands the original's mapped file pages back
// (release_mapped_pages) so that RSS holds one copy; anything reading the original later
// (the embedding lookup of a tied head, quantization reports, the CUDA upload) refaults it.
#pragma once

#include <cstdint>
#include <span>

#include "backend/cpu/thread_pool.h"
#include "memory/page_buffer.h"
#include "format/tensor.h"

namespace llmwb::cpu {

constexpr int kPanelRows = 16;

// Whether the panel layout exists for this element type (F32, F16, BF16).
bool panel_dtype(DType dtype);
// Whether this CPU has the panel kernels (AVX-512 F/BW/VL/DQ), whatever the current level.
bool cpu_has_panel_kernels();
// Whether panel_matmul runs at the current SIMD level (AVX-512); below it the backend uses
// the in-place kernels on the original, which stays readable.
bool panel_kernels_active();

// TuningConfig::from_environment().float_panels: false when LLMWB_FLOAT_PANELS=0, and float
// weights then stay in place (the lanes-along-k kernels of matmul_simd.inl) even where the
// panel kernels run, for comparing the two in benchmarks (llmwb-cli bench, roofline --kernels).
bool float_panels_enabled();

struct FloatPanels {
  DType dtype = DType::F32;
  int64_t rows = 0, cols = 0;
  int64_t panels = 0;          // ceil(rows / 16); the last panel's missing rows are zeros
  uint64_t panel_bytes = 0;    // 16 * cols * element bytes
  const uint8_t* data = nullptr;   // panels * panel_bytes bytes, 64-byte aligned
  PageBuffer storage;          // owns data when built by pack_panels_alloc (tests)
  uint64_t bytes() const { return static_cast<uint64_t>(panels) * panel_bytes; }
};

// The layout of W's panels (no data yet); throws llmwb::Error for a type without one, or
// when W's data is missing or shorter than its shape.
FloatPanels panel_layout(const TensorView& W);
// Fills panels [q_begin, q_end) (all by default) of dst (p.bytes() zero bytes, 64-byte
// aligned) from W's rows on `pool`, and points p at dst. p comes from panel_layout(W).
void pack_panels_into(const TensorView& W, FloatPanels& p, uint8_t* dst, ThreadPool& pool, int64_t q_begin = 0,
                      int64_t q_end = -1);
// Both, into a buffer of its own.
FloatPanels pack_panels(const TensorView& W, ThreadPool& pool);
// Element (r, k) read back from the panels, as a float (tests: the round trip).
float panel_element(const FloatPanels& p, int64_t r, int64_t k);
// Row r (cols floats) read back from the panels: the embedding lookup of a head tied to the
// embedding, whose mapped rows were handed back once packed (the same values as the file's).
void panel_row(const FloatPanels& p, int64_t r, float* out);

// y[t][o] = sum_k W[o][k] x[t][k] over the panels (AVX-512 only: panel_kernels_active()).
// x is [n_tokens][cols], y is [n_tokens][rows].
void panel_matmul(ThreadPool& pool, const FloatPanels& W, const float* x, int64_t n_tokens, float* y);
// Several matrices with the same cols applied to one input (Q/K/V, gate/up): x is packed once.
// Each o.y is bitwise what panel_matmul(*o.W, x) gives.
struct PanelOut {
  const FloatPanels* W = nullptr;
  float* y = nullptr;
};
void panel_matmul_multi(ThreadPool& pool, std::span<const PanelOut> outs, const float* x, int64_t n_tokens);

// From this many tokens on panel_matmul packs x and runs the blocked GEMM (bitwise the GEMV).
int panel_gemm_min_tokens();

}  // namespace llmwb::cpu
