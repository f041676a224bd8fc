// matmul_kernels.h — the per-SIMD-level kernels behind matmul() (internal to the CPU backend).
//
// matmul.cpp owns threading, scratch memory and the choice of kernel; each kernel file
// (matmul_scalar.cpp, matmul_avx2.cpp, matmul_avx512.cpp) computes a range of output rows.
// Only plain data crosses this boundary, so the SIMD files need no std:: templates whose
// inline copies, compiled with AVX-512 flags, the linker could pick for a plain-AVX2 CPU.
#pragma once

#include <cstdint>

#include "model/tensor.h"

namespace llmwb::cpu::kernels {

struct MatmulArgs {
  DType dtype = DType::F32;
  const uint8_t* w = nullptr;   // row o starts at w + o * w_row_bytes
  uint64_t w_row_bytes = 0;
  int64_t rows = 0;             // N, output features
  int64_t cols = 0;             // K, input features
  const float* x = nullptr;     // [n_tokens][cols]
  int64_t n_tokens = 0;
  float* y = nullptr;           // [n_tokens][rows]
  // Prefill only: x transposed into panels of `panel` tokens, xp[p][k][j] = x[p*panel + j][k],
  // zero beyond n_tokens, so that the micro-kernel loads `panel` tokens of one k at once.
  const float* xp = nullptr;
  int panel = 0;
};

struct KernelSet {
  const char* name;
  // y[t][o] for o in [r0, r1), every token: one dot product per (row, token), vectors along k.
  void (*gemv)(const MatmulArgs& a, int64_t r0, int64_t r1);
  // The same through the packed-panel tiled kernel; `scratch` holds gemm_scratch_floats.
  void (*gemm)(const MatmulArgs& a, int64_t r0, int64_t r1, float* scratch);
  int panel;                 // tokens per packed x panel
  int row_tile;              // rows per micro-kernel call; row ranges are split at multiples
  int gemm_min_tokens;       // use gemm from this many tokens on
  int64_t gemm_scratch_floats;
};

const KernelSet& scalar_kernels();
const KernelSet& avx2_kernels();
const KernelSet& avx512_kernels();

}  // namespace llmwb::cpu::kernels
