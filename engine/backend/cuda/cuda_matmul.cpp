#include "backend/cuda/cuda_matmul.h"

#include <algorithm>

namespace llmwb::cuda {

CudaMatmul::CudaMatmul(cudaStream_t stream) : stream_(stream) {
  LLMWB_CUDA(cublas().set_stream(cublas_.get(), stream_));
  // A workspace of our own: cuBLAS then allocates nothing inside a graph capture.
  workspace_.grow(size_t(32) << 20);
  LLMWB_CUDA(cublas().set_workspace(cublas_.get(), workspace_.as(), workspace_.bytes()));
}

void CudaMatmul::reserve(int n, int64_t w1, int64_t w2, int64_t w3, int64_t w4, int64_t max_elems) {
  if (n <= kGemvMaxRows) return;   // the GEMV needs no scratch
  const int64_t w = std::max({w1, w2, w3, w4});
  half_x_.grow(size_t(n) * size_t(w) * 2);
  half_w_.grow(size_t(max_elems) * 2);
}

void CudaMatmul::run(const DeviceMatrix& W, const float* x, int n, float* y) {
  if (n <= kGemvMaxRows)
    LLMWB_CUDA(gemv(W, x, n, y, stream_));
  else
    run_gemm(W, x, n, y);
}

void CudaMatmul::run_stacked(const DeviceMatrix* const* W, float* const* y, int count, const float* x, int n) {
  if (n <= kGemvMaxRows) {
    LLMWB_CUDA(gemv_stacked(W, y, count, x, n, stream_));
    return;
  }
  for (int i = 0; i < count; ++i) run_gemm(*W[i], x, n, y[i]);
}

void CudaMatmul::run_swiglu(const DeviceMatrix& W1, const DeviceMatrix& W3, const float* x, int n, float* out,
                            float* scratch) {
  const DeviceMatrix* w[2] = {&W1, &W3};
  if (n <= kGemvMaxRows && W1.rows == W3.rows && gemv_can_stack(w, 2, x)) {
    LLMWB_CUDA(gemv_swiglu(W1, W3, x, n, out, stream_));
    return;
  }
  run(W1, x, n, out);
  run(W3, x, n, scratch);
  LLMWB_CUDA(silu_mul(out, scratch, int64_t(n) * W1.rows, stream_));
}

void CudaMatmul::run_gemm(const DeviceMatrix& W, const float* x, int n, float* y) {
  if (n <= 0) return;
  const float alpha = 1.0f, beta = 0.0f;
  const int M = static_cast<int>(W.rows), K = static_cast<int>(W.cols);
  // Row-major y (n x M) = x (n x K) W^T, i.e. column-major y^T (M x n) = op_T(W seen as the
  // column-major K x M matrix) times x^T (column-major K x n).
  if (W.type == WType::F32) {
    LLMWB_CUDA(cublas().sgemm(cublas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, M, n, K, &alpha, static_cast<const float*>(W.data),
                           K, x, K, &beta, y, M));
    return;
  }
  const bool bf16 = W.type == WType::BF16;
  const cudaDataType dt = bf16 ? CUDA_R_16BF : CUDA_R_16F;
  const void* A = W.data;
  if (W.type != WType::F16 && !bf16) {
    half_w_.grow(size_t(W.rows) * size_t(W.cols) * 2);
    LLMWB_CUDA(dequantize_matrix(W, half_w_.as(), false, stream_));
    A = half_w_.as();
  }
  half_x_.grow(size_t(n) * size_t(K) * 2);
  LLMWB_CUDA(f32_to_half(x, half_x_.as(), int64_t(n) * K, bf16, stream_));
  LLMWB_CUDA(cublas().gemm_ex(cublas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, M, n, K, &alpha, A, dt, K, half_x_.as(), dt, K,
                          &beta, y, CUDA_R_32F, M, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace llmwb::cuda
