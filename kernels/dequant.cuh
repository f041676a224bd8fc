// dequant.cuh — device-side reads of one weight element format (engine/format/tensor.h has the
// byte layouts; the CPU's dequantize_row is the reference the gpu tests compare against).
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "llmwb_kernels.h"

namespace llmwb::cuda::detail {

__device__ __forceinline__ float ld_half(const uint8_t* p) {
  // Quantized blocks put their fp16 scales at 2-byte (not 4-byte) alignment.
  return __half2float(__ushort_as_half(*reinterpret_cast<const unsigned short*>(p)));
}

// A row of INT8_ROW is 4 + cols bytes, so its f32 scale is 4-byte aligned only when cols is.
__device__ __forceinline__ float ld_f32_unaligned(const uint8_t* p) {
  const uint32_t u = uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
  return __uint_as_float(u);
}

// 8 halves / bfloat16s (one 16-byte load) to floats, lowest address first: the GEMV's F16 and
// BF16 rows and the f16 KV pool's rows in the attention decode kernel.
__device__ __forceinline__ void unpack_half8(uint4 u, float* v) {
  const __half2* h = reinterpret_cast<const __half2*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __half22float2(h[i]);
    v[2 * i] = f.x;
    v[2 * i + 1] = f.y;
  }
}
__device__ __forceinline__ void unpack_bf168(uint4 u, float* v) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(h[i]);
    v[2 * i] = f.x;
    v[2 * i + 1] = f.y;
  }
}

// Element c of one row (row points at the row's first byte). Used by the gather and the
// dequantize-to-half kernels, where each thread reads one element; the GEMV has its own
// vectorised reads.
__device__ __forceinline__ float load_elem(WType t, const uint8_t* row, int64_t c, int64_t cols) {
  switch (t) {
    case WType::F32: return reinterpret_cast<const float*>(row)[c];
    case WType::F16: return __half2float(reinterpret_cast<const __half*>(row)[c]);
    case WType::BF16: return __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(row)[c]);
    case WType::Q8_0: {
      const uint8_t* b = row + (c / 32) * 34;
      return ld_half(b) * static_cast<float>(static_cast<int8_t>(b[2 + c % 32]));
    }
    case WType::Q4_0: {
      const uint8_t* b = row + (c / 32) * 18;
      const int j = static_cast<int>(c % 32);
      const int q = j < 16 ? (b[2 + j] & 0x0F) : (b[2 + j - 16] >> 4);
      return ld_half(b) * static_cast<float>(q - 8);
    }
    case WType::INT8_ROW: {
      return ld_f32_unaligned(row) * static_cast<float>(static_cast<int8_t>(row[4 + c]));
    }
    case WType::Q4_1:
    case WType::INT4_G32:
    case WType::INT4_G128: {
      const int group = t == WType::INT4_G128 ? 128 : 32;
      const int64_t g = c / group;
      const uint8_t* b = row + g * (4 + group / 2);
      const int n = static_cast<int>(cols - g * group < group ? cols - g * group : group);
      const int h = (n + 1) / 2;
      const int j = static_cast<int>(c - g * group);
      const int q = j < h ? (b[4 + j] & 0x0F) : (b[4 + j - h] >> 4);
      return ld_half(b) * static_cast<float>(q) + ld_half(b + 2);
    }
  }
  return 0.0f;
}

}  // namespace llmwb::cuda::detail
