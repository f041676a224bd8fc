// gemv.cu — y = W x for a few activation rows (decode), reading each weight byte once.
//
// One warp per output row; lane l takes chunks of 8 consecutive columns l, l+32, ... and
// dequantizes them in registers (F32, F16, BF16, Q8_0, Q4_0, Q4_1/INT4 groups, INT8_ROW), so the
// weights cross the memory bus in their stored width (1 byte per weight for INT8/Q8_0, half a
// byte for the 4-bit types). Each lane's chunk sum and the warp's butterfly reduction run in a
// fixed order that depends on the row length only: an output does not change with the number
// of activation rows in the call (the property the CPU matmul keeps, tests/engine/test_matmul).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "dequant.cuh"
#include "llmwb_kernels.h"

namespace llmwb::cuda {
namespace {

constexpr int kWarps = 4;

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

// Whether the 8-column fast path applies: every chunk of 8 lies inside one quantization block
// and the plain-float rows are 16-byte aligned.
bool fast_path_ok(const DeviceMatrix& W) {
  if (W.cols % 8 != 0) return false;
  switch (W.type) {
    case WType::F32: return W.cols % 4 == 0;
    case WType::F16:
    case WType::BF16: return true;
    case WType::Q8_0:
    case WType::Q4_0:
    case WType::Q4_1:
    case WType::INT4_G32: return W.cols % 32 == 0;
    case WType::INT4_G128: return W.cols % 128 == 0;
    case WType::INT8_ROW: return true;
  }
  return false;
}

// Columns c..c+7 of one row (c a multiple of 8) as floats.
template <WType T>
__device__ __forceinline__ void load8(const uint8_t* row, int64_t c, float* v) {
  if constexpr (T == WType::F32) {
    const float4 a = *reinterpret_cast<const float4*>(row + c * 4);
    const float4 b = *reinterpret_cast<const float4*>(row + c * 4 + 16);
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
  } else if constexpr (T == WType::F16) {
    unpack_half8(*reinterpret_cast<const uint4*>(row + c * 2), v);
  } else if constexpr (T == WType::BF16) {
    unpack_bf168(*reinterpret_cast<const uint4*>(row + c * 2), v);
  } else if constexpr (T == WType::Q8_0) {
    const uint8_t* b = row + (c / 32) * 34;
    const float d = detail::ld_half(b);
    const uint8_t* q = b + 2 + c % 32;   // 2-byte aligned: four 16-bit loads
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const unsigned short u = reinterpret_cast<const unsigned short*>(q)[i];
      v[2 * i] = d * static_cast<float>(static_cast<int8_t>(u & 0xFF));
      v[2 * i + 1] = d * static_cast<float>(static_cast<int8_t>(u >> 8));
    }
  } else if constexpr (T == WType::Q4_0) {
    const uint8_t* b = row + (c / 32) * 18;
    const float d = detail::ld_half(b);
    const int j = static_cast<int>(c % 32);
    const uint8_t* q = b + 2 + (j & 15);
    const int shift = j < 16 ? 0 : 4;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const unsigned short u = reinterpret_cast<const unsigned short*>(q)[i];
      v[2 * i] = d * static_cast<float>(((u >> shift) & 0x0F) - 8);
      v[2 * i + 1] = d * static_cast<float>(((u >> (8 + shift)) & 0x0F) - 8);
    }
  } else if constexpr (T == WType::Q4_1 || T == WType::INT4_G32 || T == WType::INT4_G128) {
    constexpr int G = T == WType::INT4_G128 ? 128 : 32;
    const uint8_t* b = row + (c / G) * (4 + G / 2);
    const float d = detail::ld_half(b), m = detail::ld_half(b + 2);
    const int j = static_cast<int>(c % G);
    const uint8_t* q = b + 4 + (j % (G / 2));   // 4-byte aligned: two 32-bit loads
    const int shift = j < G / 2 ? 0 : 4;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const unsigned u = reinterpret_cast<const unsigned*>(q)[i];
#pragma unroll
      for (int e = 0; e < 4; ++e) v[4 * i + e] = d * static_cast<float>((u >> (8 * e + shift)) & 0x0F) + m;
    }
  } else if constexpr (T == WType::INT8_ROW) {
    const float s = detail::ld_f32_unaligned(row);
    const uint8_t* q = row + 4 + c;
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = s * static_cast<float>(static_cast<int8_t>(q[i]));
  }
}

// NR: activation rows the registers are sized for; n (<= NR) are present. The guards are
// uniform across the warp, and row r's arithmetic is the same whatever n and NR are.
template <WType T, int NR>
__global__ void __launch_bounds__(kWarps * 32) gemv_kernel(DeviceMatrix W, const float* __restrict__ x, int n,
                                                           float* __restrict__ y) {
  const int lane = threadIdx.x % 32;
  const int64_t o = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (o >= W.rows) return;
  const uint8_t* row = static_cast<const uint8_t*>(W.data) + o * W.row_bytes;
  float acc[NR];
#pragma unroll
  for (int r = 0; r < NR; ++r) acc[r] = 0.0f;
  const int64_t chunks = W.cols / 8;
#pragma unroll 2
  for (int64_t k = lane; k < chunks; k += 32) {
    float w[8];
    load8<T>(row, k * 8, w);
#pragma unroll
    for (int r = 0; r < NR; ++r) {
      if (r >= n) break;
      const float4 a = *reinterpret_cast<const float4*>(x + r * W.cols + k * 8);
      const float4 b = *reinterpret_cast<const float4*>(x + r * W.cols + k * 8 + 4);
      acc[r] += w[0] * a.x + w[1] * a.y + w[2] * a.z + w[3] * a.w + w[4] * b.x + w[5] * b.y + w[6] * b.z + w[7] * b.w;
    }
  }
#pragma unroll
  for (int r = 0; r < NR; ++r) {
    if (r >= n) break;
    float v = acc[r];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    if (lane == 0) y[int64_t(r) * W.rows + o] = v;
  }
}

// Any shape and type, one element at a time: rows whose length breaks the 8-column chunks
// (odd test shapes, INT4 groups with a partial tail).
__global__ void gemv_generic_kernel(DeviceMatrix W, const float* __restrict__ x, int n_rows, float* __restrict__ y) {
  const int lane = threadIdx.x % 32;
  const int64_t o = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (o >= W.rows) return;
  const uint8_t* row = static_cast<const uint8_t*>(W.data) + o * W.row_bytes;
  for (int r = 0; r < n_rows; ++r) {
    float v = 0.0f;
    for (int64_t c = lane; c < W.cols; c += 32) v += detail::load_elem(W.type, row, c, W.cols) * x[r * W.cols + c];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    if (lane == 0) y[int64_t(r) * W.rows + o] = v;
  }
}

template <WType T>
cudaError_t launch_typed(const DeviceMatrix& W, const float* x, int n_rows, float* y, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>((W.rows + kWarps - 1) / kWarps));
  static_assert(kGemvMaxRows == 8);
  if (n_rows == 1)
    gemv_kernel<T, 1><<<grid, kWarps * 32, 0, s>>>(W, x, n_rows, y);
  else if (n_rows <= 4)
    gemv_kernel<T, 4><<<grid, kWarps * 32, 0, s>>>(W, x, n_rows, y);
  else
    gemv_kernel<T, 8><<<grid, kWarps * 32, 0, s>>>(W, x, n_rows, y);
  return cudaGetLastError();
}

}  // namespace

cudaError_t gemv(const DeviceMatrix& W, const float* x, int n_rows, float* y, cudaStream_t s) {
  if (n_rows <= 0 || W.rows <= 0) return cudaSuccess;
  if (n_rows > kGemvMaxRows) return cudaErrorInvalidValue;
  // The fast path reads x with 16-byte loads.
  const bool x_aligned = reinterpret_cast<uintptr_t>(x) % 16 == 0;
  if (!fast_path_ok(W) || !x_aligned || reinterpret_cast<uintptr_t>(W.data) % 16 != 0 ||
      (W.type == WType::F32 && W.row_bytes % 16 != 0)) {
    gemv_generic_kernel<<<static_cast<unsigned>((W.rows + kWarps - 1) / kWarps), kWarps * 32, 0, s>>>(W, x, n_rows, y);
    return cudaGetLastError();
  }
  switch (W.type) {
    case WType::F32: return launch_typed<WType::F32>(W, x, n_rows, y, s);
    case WType::F16: return launch_typed<WType::F16>(W, x, n_rows, y, s);
    case WType::BF16: return launch_typed<WType::BF16>(W, x, n_rows, y, s);
    case WType::Q8_0: return launch_typed<WType::Q8_0>(W, x, n_rows, y, s);
    case WType::Q4_0: return launch_typed<WType::Q4_0>(W, x, n_rows, y, s);
    case WType::Q4_1: return launch_typed<WType::Q4_1>(W, x, n_rows, y, s);
    case WType::INT4_G32: return launch_typed<WType::INT4_G32>(W, x, n_rows, y, s);
    case WType::INT4_G128: return launch_typed<WType::INT4_G128>(W, x, n_rows, y, s);
    case WType::INT8_ROW: return launch_typed<WType::INT8_ROW>(W, x, n_rows, y, s);
  }
  return cudaErrorInvalidValue;
}

}  // namespace llmwb::cuda
