// qmatmul_blocks.cpp — every quantized weight dtype seen as blocks of 32 small integers with
// a scale and an offset coefficient (see qmatmul_kernels.h), decoded one block at a time.
// The values equal dequantize_row's: x = d_half * q + m * 1 for each element (tensor.cpp).
#include <cstring>

#include "backend/cpu/qmatmul_kernels.h"

namespace llmwb::cpu::qkernels {

namespace {

float half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return fp16_to_fp32(h);
}

// Q4_1-layout groups of `group` elements (Q4_1, INT4_G32, INT4_G128), the last possibly
// partial: a group of n elements has h = ceil(n / 2) bytes, byte j = element j (low nibble)
// and element j + h (high nibble).
void unpack_q4_1_group(const uint8_t* row, int64_t cols, int64_t b, int group, QBlock* out) {
  const int64_t g = b * kQB / group, g0 = g * group;
  const int n = static_cast<int>(cols - g0 < group ? cols - g0 : group);
  const uint8_t* src = row + g * (4 + group / 2);
  const uint8_t* qs = src + 4;
  const int h = (n + 1) / 2;
  const int e0 = static_cast<int>(b * kQB - g0);
  for (int j = 0; j < kQB; ++j) {
    const int e = e0 + j;
    out->q[j] = static_cast<int8_t>(e >= n ? 0 : e < h ? (qs[e] & 0x0F) : (qs[e - h] >> 4));
  }
  out->d_lo = out->d_hi = half_at(src);
  out->m = half_at(src + 2);
}

void copy_int8(const uint8_t* q, int64_t cols, int64_t b, QBlock* out) {
  const int64_t n = cols - b * kQB < kQB ? cols - b * kQB : kQB;
  std::memset(out->q, 0, kQB);
  std::memcpy(out->q, q + b * kQB, static_cast<size_t>(n));
  out->d_lo = out->d_hi = 1.0f;
  out->m = 0.0f;
}

}  // namespace

void unpack_block(DType t, const uint8_t* row, int64_t cols, int64_t b, QBlock* out) {
  switch (t) {
    case DType::INT8_ROW: copy_int8(row + 4, cols, b, out); return;
    case DType::INT8_ASYM_ROW: copy_int8(row + 8, cols, b, out); return;
    case DType::Q8_0: {
      const uint8_t* src = row + b * (2 + kQB);
      std::memcpy(out->q, src + 2, kQB);
      out->d_lo = out->d_hi = half_at(src);
      out->m = 0.0f;
      return;
    }
    case DType::Q4_0: {
      const uint8_t* src = row + b * (2 + kQB / 2);
      for (int j = 0; j < kQB / 2; ++j) {
        out->q[j] = static_cast<int8_t>(src[2 + j] & 0x0F);
        out->q[j + kQB / 2] = static_cast<int8_t>(src[2 + j] >> 4);
      }
      // x = d (q - 8) = d q + (-8 d): the offset multiplies the activation block sum.
      out->d_lo = out->d_hi = half_at(src);
      out->m = -8.0f * out->d_lo;
      return;
    }
    case DType::Q4_1:
    case DType::INT4_G32: unpack_q4_1_group(row, cols, b, 32, out); return;
    case DType::INT4_G128: unpack_q4_1_group(row, cols, b, 128, out); return;
    case DType::Q4_K:
    case DType::Q5_K: {
      // Sub-block j of super-block sb: x = d sc q - dmin mn (see dequantize_q4_k / q5_k).
      const bool five = t == DType::Q5_K;
      const int64_t sb = b / 8;
      const int j = static_cast<int>(b % 8);
      const uint8_t* src = row + sb * dtype_info(t).block_bytes;
      const uint8_t* scales = src + 4;
      const uint8_t* qh = src + 16;
      const uint8_t* qs = (five ? qh + 32 : src + 16) + 32 * (j / 2);
      for (int l = 0; l < kQB; ++l) {
        int q = (j & 1) ? qs[l] >> 4 : qs[l] & 0x0F;
        if (five && (qh[l] >> j) & 1) q += 16;
        out->q[l] = static_cast<int8_t>(q);
      }
      int sc, mn;
      k4_scale_min(j, scales, &sc, &mn);
      out->d_lo = out->d_hi = half_at(src) * static_cast<float>(sc);
      out->m = -(half_at(src + 2) * static_cast<float>(mn));
      return;
    }
    case DType::Q6_K: {
      // Half n (128 elements) of super-block sb, quarter k: elements l + 32 k of the half,
      // x = d sc[2k + l / 16] (q - 32) (see dequantize_q6_k).
      const int64_t sb = b / 8;
      const int n = static_cast<int>(b % 8) / 4, k = static_cast<int>(b % 4);
      const uint8_t* src = row + sb * dtype_info(t).block_bytes;
      const uint8_t* ql = src + 64 * n + (k & 1) * 32;
      const uint8_t* qh = src + 128 + 32 * n;
      const auto* sc = reinterpret_cast<const int8_t*>(src + 192 + 8 * n);
      for (int l = 0; l < kQB; ++l) {
        const int lo = (k & 2) ? ql[l] >> 4 : ql[l] & 0x0F;
        out->q[l] = static_cast<int8_t>((lo | (((qh[l] >> (2 * k)) & 3) << 4)) - 32);
      }
      const float d = half_at(src + 208);
      out->d_lo = d * static_cast<float>(sc[2 * k]);
      out->d_hi = d * static_cast<float>(sc[2 * k + 1]);
      out->m = 0.0f;
      return;
    }
    default: break;
  }
  std::memset(out, 0, sizeof(*out));
}

void unpack_packed_block(DType t, const uint8_t* grp, int i, int jb, QBlock* out) {
  const uint8_t* blk = grp + packed_head_bytes(t) + jb * packed_block_bytes(t);
  const float d = half_at(grp + 2 * i);
  out->m = 0.0f;
  if (t == DType::Q8_0) {
    out->d_lo = out->d_hi = d;
    for (int v = 0; v < 8; ++v)
      for (int j = 0; j < 4; ++j) out->q[4 * v + j] = static_cast<int8_t>(blk[64 * v + 4 * i + j] ^ 0x80);
    return;
  }
  if (t == DType::Q6_K) {
    out->d_lo = d * static_cast<float>(static_cast<int8_t>(grp[32 + 16 * (2 * jb) + i]));
    out->d_hi = d * static_cast<float>(static_cast<int8_t>(grp[32 + 16 * (2 * jb + 1) + i]));
  } else {
    out->d_lo = out->d_hi = d * static_cast<float>(grp[64 + 16 * jb + i]);
    out->m = -(half_at(grp + 32 + 2 * i) * static_cast<float>(grp[64 + 128 + 16 * jb + i]));
  }
  for (int v = 0; v < 4; ++v) {
    for (int j = 0; j < 4; ++j) {
      const uint8_t byte = blk[64 * v + 4 * i + j];
      int lo = byte & 0x0F, hi = byte >> 4;
      if (t == DType::Q5_K) {
        const uint8_t hb = blk[256 + 4 * i + j];
        lo |= ((hb >> v) & 1) << 4;
        hi |= ((hb >> (4 + v)) & 1) << 4;
      } else if (t == DType::Q6_K) {
        const uint8_t hb = blk[256 + 64 * (v >> 1) + 4 * i + j];
        const int k = 2 * (v & 1);
        lo = (lo | ((hb >> (2 * k)) & 3) << 4) - 32;
        hi = (hi | ((hb >> (2 * k + 2)) & 3) << 4) - 32;
      }
      out->q[8 * v + j] = static_cast<int8_t>(lo);
      out->q[8 * v + 4 + j] = static_cast<int8_t>(hi);
    }
  }
}

void row_params(DType t, const uint8_t* row, float* post, float* z) {
  *post = 1.0f;
  *z = 0.0f;
  if (t == DType::INT8_ROW || t == DType::INT8_ASYM_ROW) std::memcpy(post, row, 4);
  if (t == DType::INT8_ASYM_ROW) {
    int32_t zi;
    std::memcpy(&zi, row + 4, 4);
    *z = static_cast<float>(zi);
  }
}

int64_t full_blocks(DType t, int64_t cols) {
  switch (t) {
    case DType::INT8_ROW:
    case DType::INT8_ASYM_ROW:
    case DType::INT4_G32: return cols / kQB;
    case DType::INT4_G128: return cols / 128 * 4;
    default: return cols / kQB;   // GGUF block types: rows are whole blocks
  }
}

}  // namespace llmwb::cpu::qkernels
