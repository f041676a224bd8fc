// matmul_kernels.h — the per-SIMD-level kernels behind matmul() (internal to the CPU backend).
//
// matmul.cpp owns threading, scratch memory and the choice of kernel; each kernel file
// (matmul_scalar.cpp, matmul_avx2.cpp, matmul_avx512.cpp) computes a range of output rows.
// Only plain data crosses this boundary, so the SIMD files need no std:: templates whose
// inline copies, compiled with AVX-512 flags, the linker could pick for a plain-AVX2 CPU.
//
// Batch invariance: for one kernel set and one dtype, every output y[t][o] is summed in the
// same order whichever entry point computes it, however many tokens the call has, wherever
// token t sits in it and however the rows are split (see matmul_simd.inl for the order).
#pragma once

#include <cstdint>

#include "format/tensor.h"

namespace llmwb::cpu::kernels {

struct MatmulArgs {
  DType dtype = DType::F32;
  const uint8_t* w = nullptr;   // row o starts at w + o * w_row_bytes
  uint64_t w_row_bytes = 0;
  int64_t cols = 0;             // K, input features
  const float* x = nullptr;     // [n_tokens][cols]
  int64_t n_tokens = 0;
  float* y = nullptr;           // y[t * y_stride + o]
  int64_t y_stride = 0;         // N, the output features of the whole matrix
  // gemm only: x packed by pack_x, 64-byte aligned.
  const float* xp = nullptr;
};

struct KernelSet {
  const char* name;
  // True for the weight types these float kernels decode (F32 / F16 / BF16); quantized types
  // never reach them (matmul.cpp routes them to qmatmul).
  bool (*handles)(DType dtype);
  // y[t][o] for o in [r0, r1), every token, reading the weights in place (decode, few tokens).
  void (*gemv)(const MatmulArgs& a, int64_t r0, int64_t r1);
  // The same, blocked for cache reuse across many tokens (prefill): rows are taken in blocks
  // that are decoded once into `scratch` (gemm_scratch_floats(cols) floats, which also hold
  // the lane accumulators) and reused by every token tile. Bitwise equal to gemv.
  // Needs a.xp: x packed once per call by pack_x for token tiles [0, gemm_token_tiles(T)).
  void (*gemm)(const MatmulArgs& a, int64_t r0, int64_t r1, float* scratch);
  int64_t (*gemm_scratch_floats)(int64_t cols);
  // Packs the x rows of token tiles [tile0, tile1) into xp (gemm_xp_floats floats in all).
  void (*pack_x)(const MatmulArgs& a, int64_t tile0, int64_t tile1, float* xp);
  int64_t (*gemm_xp_floats)(int64_t n_tokens, int64_t cols);
  int gemm_token_tile;       // tokens per register tile of gemm
  int row_tile;              // rows per register tile; row ranges are split at multiples
  int gemm_min_tokens;       // use gemm from this many tokens on
  int64_t gemm_block_floats; // decoded weights per row block (sized for a quarter of the L2)
};

// Rows per gemm row block for K = cols: the L2 budget in whole register tiles, at least one.
constexpr int64_t gemm_block_rows(int64_t block_floats, int row_tile, int64_t cols) {
  const int64_t rows = block_floats / (cols > 0 ? cols : 1) / row_tile * row_tile;
  return rows > row_tile ? rows : row_tile;
}

const KernelSet& scalar_kernels();
const KernelSet& avx2_kernels();
const KernelSet& avx512_kernels();

}  // namespace llmwb::cpu::kernels
