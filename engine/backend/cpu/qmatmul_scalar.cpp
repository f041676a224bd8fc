// qmatmul_scalar.cpp — the portable integer-dot kernel: each weight row is unpacked block by
// block (qmatmul_blocks.cpp) once per call and multiplied with every token. Each output is
// summed in one order whatever the batch, so this level is batch-invariant too.
#include <cmath>
#include <cstring>
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

float half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return fp16_to_fp32(h);
}

}  // namespace

// The repacked layout row by row, in the order of qmatmul_kernels.h (std::fma rounds once,
// like the vector FMAs, so this level gives the SIMD levels' bits).
namespace {

// Q8_0 and the k-quants (qmatmul_kernels.h): each block decoded by unpack_packed_block, its
// two halves summed exactly, combined in the order the vector kernels use.
void packed_rows_other(const PackedArgs& a, int64_t r0, int64_t r1) {
  const DType t = a.dtype;
  QBlock qb;
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* tile = a.w + (r / kPackRows) * a.tile_bytes;
    const int i = static_cast<int>(r % kPackRows);
    for (int64_t tok = 0; tok < a.n_tokens; ++tok) {
      const int8_t* xq = a.x.q + tok * a.x.q_stride;
      const float* xd = a.x.d + tok * a.nb;
      const float* xc = a.x.c + tok * a.nb;
      float acc = 0.0f, macc = 0.0f;
      for (int64_t b = 0; b < a.nb; ++b) {
        unpack_packed_block(t, tile + (b / a.gb) * a.group_bytes, i, static_cast<int>(b % a.gb), &qb);
        const int8_t* x = xq + b * kQB;
        int32_t lo = 0, hi = 0;
        for (int j = 0; j < kQB / 2; ++j) lo += int32_t{qb.q[j]} * x[j];
        for (int j = kQB / 2; j < kQB; ++j) hi += int32_t{qb.q[j]} * x[j];
        if (t == DType::Q6_K) {
          acc = std::fma(static_cast<float>(lo), qb.d_lo * xd[b], acc);
          acc = std::fma(static_cast<float>(hi), qb.d_hi * xd[b], acc);
        } else {
          acc = std::fma(static_cast<float>(lo + hi), qb.d_lo * xd[b], acc);
          macc = std::fma(qb.m, xc[b], macc);
        }
      }
      a.y[tok * a.y_stride + r] = packed_has_m(t) ? acc + macc : acc;
    }
  }
}

}  // namespace

void packed_rows_scalar(const PackedArgs& a, int64_t r0, int64_t r1) {
  if (!packed_q4_family(a.dtype)) {
    packed_rows_other(a, r0, r1);
    return;
  }
  const bool has_m = packed_has_m(a.dtype);
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* tile = a.w + (r / kPackRows) * a.tile_bytes;
    const int i = static_cast<int>(r % kPackRows);
    for (int64_t t = 0; t < a.n_tokens; ++t) {
      const int8_t* xq = a.x.q + t * a.x.q_stride;
      const float* xd = a.x.d + t * a.nb;
      const float* xc = a.x.c + t * a.nb;
      float acc = 0.0f, macc = 0.0f;
      for (int64_t b = 0; b < a.nb; ++b) {
        const uint8_t* grp = tile + (b / a.gb) * a.group_bytes;
        const float d = half_at(grp + 2 * i);
        const float m = has_m ? half_at(grp + 32 + 2 * i) : -8.0f * d;
        const uint8_t* blk = grp + (has_m ? 64 : 32) + (b % a.gb) * kPackBlockBytes;
        const int8_t* x = xq + b * kQB;
        int32_t isum = 0;
        for (int v = 0; v < 4; ++v) {
          for (int j = 0; j < 4; ++j) {
            const uint8_t byte = blk[64 * v + 4 * i + j];
            isum += int32_t{byte & 0x0F} * x[8 * v + j] + int32_t{byte >> 4} * x[8 * v + 4 + j];
          }
        }
        acc = std::fma(static_cast<float>(isum), d * xd[b], acc);
        macc = std::fma(m, xc[b], macc);
      }
      a.y[t * a.y_stride + r] = acc + macc;
    }
  }
}

const QKernelSet& scalar_qkernels() {
  static constexpr QKernelSet k = {"scalar",           &scalar_rows, 1, &packed_rows_scalar, "scalar-x16",
                                    &quantize_blocks_scalar, 1,            false};
  return k;
}

}  // namespace llmwb::cpu::qkernels
