// qmatmul_scalar.cpp — the portable integer-dot kernel: each weight row is unpacked block by
// block (qmatmul_blocks.cpp) once per call and multiplied with every token. Each output is
// summed in one order whatever the batch, so this level is batch-invariant too.
#include <vector>

#include "backend/cpu/qmatmul_kernels.h"

namespace llmwb::cpu::qkernels {

namespace {

void scalar_rows(const QArgs& a, int64_t r0, int64_t r1) {
  thread_local std::vector<QBlock> blocks;
  if (blocks.size() < static_cast<size_t>(a.nb)) blocks.resize(static_cast<size_t>(a.nb));
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* row = a.w + r * a.w_row_bytes;
    for (int64_t b = 0; b < a.nb; ++b) unpack_block(a.dtype, row, a.cols, b, &blocks[static_cast<size_t>(b)]);
    float post, z;
    row_params(a.dtype, row, &post, &z);
    for (int64_t t = 0; t < a.n_tokens; ++t) {
      const int8_t* xq = a.x.q + t * a.x.q_stride;
      const float* xd = a.x.d + t * a.nb;
      const float* xc = a.x.c + t * a.nb;
      float acc = 0.0f, macc = 0.0f;
      for (int64_t b = 0; b < a.nb; ++b) {
        const QBlock& w = blocks[static_cast<size_t>(b)];
        const int8_t* x = xq + b * kQB;
        int32_t lo = 0, hi = 0;
        for (int j = 0; j < kQB / 2; ++j) lo += int32_t{w.q[j]} * x[j];
        for (int j = kQB / 2; j < kQB; ++j) hi += int32_t{w.q[j]} * x[j];
        acc += xd[b] * (w.d_lo * static_cast<float>(lo) + w.d_hi * static_cast<float>(hi));
        macc += w.m * xc[b];
      }
      a.y[t * a.y_stride + r] = post * ((acc + macc) - z * a.x.csum[t]);
    }
  }
}

}  // namespace

const QKernelSet& scalar_qkernels() {
  static constexpr QKernelSet k = {"scalar", &scalar_rows, 1};
  return k;
}

}  // namespace llmwb::cpu::qkernels
