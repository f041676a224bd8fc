// convert.cu — precision conversions for the prefill path: weights of any stored format
// dequantized to half/bfloat16 and fp32 activations rounded to half/bfloat16, so cuBLAS can run
// one tensor-core GEMM over many tokens (fp32 accumulation).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "dequant.cuh"
#include "launch.cuh"
#include "llmwb_kernels.h"

namespace llmwb::cuda {
namespace {

constexpr int kThreads = 256;

unsigned grid_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65535 * 32 ? (b > 0 ? b : 1) : 65535 * 32);
}

template <bool BF16>
__global__ void dequantize_kernel(DeviceMatrix W, void* dst) {
  const int64_t n = W.rows * W.cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / W.cols, c = i % W.cols;
    const float v = detail::load_elem(W.type, static_cast<const uint8_t*>(W.data) + r * W.row_bytes, c, W.cols);
    if constexpr (BF16)
      static_cast<__nv_bfloat16*>(dst)[i] = __float2bfloat16_rn(v);
    else
      static_cast<__half*>(dst)[i] = __float2half_rn(v);
  }
}

template <bool BF16>
__global__ void to_half_kernel(const float* src, void* dst, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    if constexpr (BF16)
      static_cast<__nv_bfloat16*>(dst)[i] = __float2bfloat16_rn(src[i]);
    else
      static_cast<__half*>(dst)[i] = __float2half_rn(src[i]);
  }
}

}  // namespace

cudaError_t dequantize_matrix(const DeviceMatrix& W, void* dst, bool to_bf16, cudaStream_t s) {
  const int64_t n = W.rows * W.cols;
  if (n <= 0) return cudaSuccess;
  if (to_bf16)
    LLMWB_LAUNCH(grid_for(n), kThreads, 0, s, dequantize_kernel<true>)(W, dst);
  else
    LLMWB_LAUNCH(grid_for(n), kThreads, 0, s, dequantize_kernel<false>)(W, dst);
  return cudaGetLastError();
}

cudaError_t f32_to_half(const float* src, void* dst, int64_t n, bool to_bf16, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  if (to_bf16)
    LLMWB_LAUNCH(grid_for(n), kThreads, 0, s, to_half_kernel<true>)(src, dst, n);
  else
    LLMWB_LAUNCH(grid_for(n), kThreads, 0, s, to_half_kernel<false>)(src, dst, n);
  return cudaGetLastError();
}

}  // namespace llmwb::cuda
