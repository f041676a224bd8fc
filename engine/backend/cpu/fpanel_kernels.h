// fpanel_kernels.h — the AVX-512 kernels behind panel_matmul (fpanel.h), plain data only (as
// matmul_kernels.h, so no std:: template compiled with AVX-512 flags can leak to other code).
#pragma once

#include <cstdint>

#include "format/tensor.h"

namespace llmwb::cpu::fpanel {

struct Args {
  DType dtype = DType::F32;
  const uint8_t* w = nullptr;   // panel p at w + p * panel_bytes
  uint64_t panel_bytes = 0;
  int64_t rows = 0, cols = 0, panels = 0;
  const float* x = nullptr;     // [n_tokens][cols]
  int64_t n_tokens = 0;
  float* y = nullptr;           // [n_tokens][rows]
  const float* xp = nullptr;    // gemm: x packed by pack_x
  int64_t prefetch = 1024;      // gemv: bytes ahead of each panel stream prefetched into L1, 0 = none
};

// Tokens per GEMM register tile (the x panel width).
constexpr int kTokenPanel = 12;
// The GEMM's k-chunks: K split into the fewest chunks of at most kKc columns, as even as
// whole columns allow (chunk_cols). A chunk of 12 tokens' x is ~18 KiB, in L1 under a tile.
constexpr int64_t kKc = 384;
int64_t chunk_cols(int64_t cols);

// Panels per GEMV register tile (weight streams a tile reads at once).
constexpr int kGemvPanels = 4;
// Outputs of panels [p0, p1), every token, reading the panels directly (few tokens).
void gemv(const Args& a, int64_t p0, int64_t p1);
// The same for many tokens, blocked: needs a.xp (pack_x over every token panel) and a
// per-thread scratch of gemm_scratch_floats(cols) floats (f16 / bf16 blocks widened to f32).
// `after`: the panel range this thread computes next (a matrix sharing x), whose first chunk
// of weights the last one of this range prefetches into L2; none by default.
struct NextRange {
  const Args* a = nullptr;
  int64_t p0 = 0, p1 = 0;
};
void gemm(const Args& a, int64_t p0, int64_t p1, float* scratch, const NextRange& after = {});
int64_t gemm_scratch_floats(int64_t cols);
// x packed by k-chunk and token panel: chunk [k0, k0 + kn) of token panel q holds
// x[q * kTokenPanel + j][k0 + k] at xp[k0 * n_tp * kTokenPanel + q * kn * kTokenPanel + k * kTokenPanel + j]
// (n_tp = token panels), so a chunk's sweep reads one contiguous stream; xp_floats(T, K) in all.
int64_t xp_floats(int64_t n_tokens, int64_t cols);
void pack_x(const Args& a, int64_t q0, int64_t q1, float* xp);
// Panels [q0, q1) of a rows x cols matrix of `dtype` (F32 / F16 / BF16, rows row_bytes apart)
// into dst (panel q at dst + q * panel_bytes; rows past `rows` are left as they are, zero).
void pack_panels(DType dtype, const uint8_t* w, uint64_t row_bytes, int64_t rows, int64_t cols, int64_t q0, int64_t q1,
                 uint8_t* dst, uint64_t panel_bytes);

}  // namespace llmwb::cpu::fpanel
