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
#include "launch.cuh"
#include "llmwb_kernels.h"

namespace llmwb::cuda {
namespace {

constexpr int kWarps = 4;

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
    detail::unpack_half8(*reinterpret_cast<const uint4*>(row + c * 2), v);
  } else if constexpr (T == WType::BF16) {
    detail::unpack_bf168(*reinterpret_cast<const uint4*>(row + c * 2), v);
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

// Up to three matrices of one type and width whose rows are stacked (Q, K and V read by one
// launch), or, with SWIGLU, two (gate W1 and up W3) whose row o is read by the same warp, which
// writes silu(W1 x)[o] * (W3 x)[o] directly.
struct GemvArgs {
  const uint8_t* d[3];
  int64_t row_bytes[3];
  float* y[3];
  int64_t rows[3];   // rows of each part (0 for parts not present)
  int64_t cols;
};

// The dot products of one weight row with n activation rows: per lane, chunks of 8 in a fixed
// order, then a butterfly over the warp. The same arithmetic in every kernel variant, so that
// the fused launches give the separate ones' bits.
template <WType T, int NR>
__device__ __forceinline__ void row_dots(const uint8_t* row, const float* __restrict__ x, int64_t cols, int n,
                                         int lane, float* acc) {
#pragma unroll
  for (int r = 0; r < NR; ++r) acc[r] = 0.0f;
  const int64_t chunks = cols / 8;
#pragma unroll 2
  for (int64_t k = lane; k < chunks; k += 32) {
    float w[8];
    load8<T>(row, k * 8, w);
#pragma unroll
    for (int r = 0; r < NR; ++r) {
      if (r >= n) break;
      const float4 a = *reinterpret_cast<const float4*>(x + r * cols + k * 8);
      const float4 b = *reinterpret_cast<const float4*>(x + r * cols + k * 8 + 4);
      acc[r] += w[0] * a.x + w[1] * a.y + w[2] * a.z + w[3] * a.w + w[4] * b.x + w[5] * b.y + w[6] * b.z + w[7] * b.w;
    }
  }
#pragma unroll
  for (int r = 0; r < NR; ++r)
    for (int off = 16; off > 0; off >>= 1) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], off);
}

// NR: activation rows the registers are sized for; n (<= NR) are present. The guards are
// uniform across the warp, and row r's arithmetic is the same whatever n and NR are.
template <WType T, int NR, bool SWIGLU>
__global__ void __launch_bounds__(kWarps * 32) gemv_kernel(GemvArgs a, const float* __restrict__ x, int n) {
  const int lane = threadIdx.x % 32;
  int64_t o = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;
  float acc[NR];
  if constexpr (SWIGLU) {
    if (o >= a.rows[0]) return;
    float up[NR];
    row_dots<T, NR>(a.d[0] + o * a.row_bytes[0], x, a.cols, n, lane, acc);
    row_dots<T, NR>(a.d[1] + o * a.row_bytes[1], x, a.cols, n, lane, up);
    if (lane == 0) {
#pragma unroll
      for (int r = 0; r < NR; ++r) {
        if (r >= n) break;
        const float g = acc[r];
        a.y[0][int64_t(r) * a.rows[0] + o] = g / (1.0f + expf(-g)) * up[r];   // as silu_mul_kernel
      }
    }
  } else {
    // Which stacked part this warp's row is in (selects with constant indices keep the
    // arguments out of local memory).
    int part = 0;
    if (o >= a.rows[0]) {
      o -= a.rows[0];
      part = 1;
      if (o >= a.rows[1]) {
        o -= a.rows[1];
        part = 2;
        if (o >= a.rows[2]) return;
      }
    }
    const uint8_t* d = part == 0 ? a.d[0] : part == 1 ? a.d[1] : a.d[2];
    const int64_t rb = part == 0 ? a.row_bytes[0] : part == 1 ? a.row_bytes[1] : a.row_bytes[2];
    float* y = part == 0 ? a.y[0] : part == 1 ? a.y[1] : a.y[2];
    const int64_t rows = part == 0 ? a.rows[0] : part == 1 ? a.rows[1] : a.rows[2];
    row_dots<T, NR>(d + o * rb, x, a.cols, n, lane, acc);
    if (lane == 0) {
#pragma unroll
      for (int r = 0; r < NR; ++r) {
        if (r >= n) break;
        y[int64_t(r) * rows + o] = acc[r];
      }
    }
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

template <WType T, bool SWIGLU>
cudaError_t launch_typed(const GemvArgs& a, const float* x, int n_rows, cudaStream_t s) {
  const int64_t rows = SWIGLU ? a.rows[0] : a.rows[0] + a.rows[1] + a.rows[2];
  const dim3 grid(static_cast<unsigned>((rows + kWarps - 1) / kWarps));
  static_assert(kGemvMaxRows == 8);
  if (n_rows == 1)
    LLMWB_LAUNCH(grid, kWarps * 32, 0, s, gemv_kernel<T, 1, SWIGLU>)(a, x, n_rows);
  else if (n_rows <= 4)
    LLMWB_LAUNCH(grid, kWarps * 32, 0, s, gemv_kernel<T, 4, SWIGLU>)(a, x, n_rows);
  else
    LLMWB_LAUNCH(grid, kWarps * 32, 0, s, gemv_kernel<T, 8, SWIGLU>)(a, x, n_rows);
  return cudaGetLastError();
}

template <bool SWIGLU>
cudaError_t launch(WType t, const GemvArgs& a, const float* x, int n_rows, cudaStream_t s) {
  switch (t) {
    case WType::F32: return launch_typed<WType::F32, SWIGLU>(a, x, n_rows, s);
    case WType::F16: return launch_typed<WType::F16, SWIGLU>(a, x, n_rows, s);
    case WType::BF16: return launch_typed<WType::BF16, SWIGLU>(a, x, n_rows, s);
    case WType::Q8_0: return launch_typed<WType::Q8_0, SWIGLU>(a, x, n_rows, s);
    case WType::Q4_0: return launch_typed<WType::Q4_0, SWIGLU>(a, x, n_rows, s);
    case WType::Q4_1: return launch_typed<WType::Q4_1, SWIGLU>(a, x, n_rows, s);
    case WType::INT4_G32: return launch_typed<WType::INT4_G32, SWIGLU>(a, x, n_rows, s);
    case WType::INT4_G128: return launch_typed<WType::INT4_G128, SWIGLU>(a, x, n_rows, s);
    case WType::INT8_ROW: return launch_typed<WType::INT8_ROW, SWIGLU>(a, x, n_rows, s);
  }
  return cudaErrorInvalidValue;
}

// Whether the vectorised kernel can read W and x: see fast_path_ok; x is read with 16-byte loads.
bool vector_ok(const DeviceMatrix& W, const float* x) {
  return fast_path_ok(W) && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
         reinterpret_cast<uintptr_t>(W.data) % 16 == 0 && (W.type != WType::F32 || W.row_bytes % 16 == 0);
}

GemvArgs args_of(const DeviceMatrix* const* W, float* const* y, int count) {
  GemvArgs a{};
  for (int i = 0; i < count; ++i) {
    a.d[i] = static_cast<const uint8_t*>(W[i]->data);
    a.row_bytes[i] = W[i]->row_bytes;
    a.y[i] = y[i];
    a.rows[i] = W[i]->rows;
  }
  a.cols = W[0]->cols;
  return a;
}

}  // namespace

cudaError_t gemv(const DeviceMatrix& W, const float* x, int n_rows, float* y, cudaStream_t s) {
  const DeviceMatrix* w[1] = {&W};
  float* ys[1] = {y};
  return gemv_stacked(w, ys, 1, x, n_rows, s);
}

bool gemv_can_stack(const DeviceMatrix* const* W, int count, const float* x) {
  for (int i = 0; i < count; ++i)
    if (!vector_ok(*W[i], x) || W[i]->type != W[0]->type || W[i]->cols != W[0]->cols) return false;
  return count >= 1 && count <= 3;
}

cudaError_t gemv_stacked(const DeviceMatrix* const* W, float* const* y, int count, const float* x, int n_rows,
                         cudaStream_t s) {
  if (n_rows <= 0 || count <= 0) return cudaSuccess;
  if (n_rows > kGemvMaxRows || count > 3) return cudaErrorInvalidValue;
  if (!gemv_can_stack(W, count, x)) {
    if (count > 1) {   // each on its own, vectorised where it can be
      for (int i = 0; i < count; ++i)
        if (const cudaError_t e = gemv_stacked(W + i, y + i, 1, x, n_rows, s); e != cudaSuccess) return e;
      return cudaSuccess;
    }
    if (W[0]->rows <= 0) return cudaSuccess;
    LLMWB_LAUNCH(static_cast<unsigned>((W[0]->rows + kWarps - 1) / kWarps), kWarps * 32, 0, s, gemv_generic_kernel)(*W[0], x, n_rows,
                                                                                                      y[0]);
    return cudaGetLastError();
  }
  return launch<false>(W[0]->type, args_of(W, y, count), x, n_rows, s);
}

cudaError_t gemv_swiglu(const DeviceMatrix& W1, const DeviceMatrix& W3, const float* x, int n_rows, float* out,
                        cudaStream_t s) {
  if (n_rows <= 0) return cudaSuccess;
  const DeviceMatrix* w[2] = {&W1, &W3};
  if (n_rows > kGemvMaxRows || W1.rows != W3.rows || !gemv_can_stack(w, 2, x)) return cudaErrorInvalidValue;
  float* ys[2] = {out, nullptr};
  return launch<true>(W1.type, args_of(w, ys, 2), x, n_rows, s);
}

}  // namespace llmwb::cuda
