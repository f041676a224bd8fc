// cuda_matmul.h — y = W x on the device for any stored weight format.
//
// Up to kGemvMaxRows tokens (decode): the GEMV kernel, which streams the weights once in their
// stored width and is batch-invariant. More tokens (prefill, large decode batches): cuBLAS with
// fp32 accumulation — F32 weights by SGEMM (plain fp32, no TF32), F16/BF16 weights directly with
// activations rounded to the same type, quantized weights dequantized to fp16 first.
#pragma once

#include <utility>

#include "backend/cuda/cuda_resources.h"
#include "llmwb_kernels.h"

namespace llmwb::cuda {

class CudaMatmul {
 public:
  explicit CudaMatmul(cudaStream_t stream);
  // x: n_rows x W.cols, y: n_rows x W.rows (device, fp32).
  void run(const DeviceMatrix& W, const float* x, int n_rows, float* y);
  // Up to three products of the same input (Q, K, V): one GEMV launch for <= 8 tokens.
  void run_stacked(const DeviceMatrix* const* W, float* const* y, int count, const float* x, int n_rows);
  // out = silu(W1 x) * (W3 x): one GEMV launch over both matrices for <= 8 tokens; otherwise
  // two products (the second into `scratch`, n_rows x W3.rows) and silu_mul.
  void run_swiglu(const DeviceMatrix& W1, const DeviceMatrix& W3, const float* x, int n_rows, float* out,
                  float* scratch);
  // Sizes the scratch buffers for n_rows tokens and matrices up to these widths and element
  // count, so that run() allocates nothing (required while a CUDA graph is being captured).
  void reserve(int n_rows, int64_t w1, int64_t w2, int64_t w3, int64_t w4, int64_t max_matrix_elems);
  // The scratch buffers' addresses (they move when they grow).
  std::pair<const void*, const void*> scratch() const { return {half_x_.as(), half_w_.as()}; }
  // The cuBLAS path for any row count (tests compare it with the GEMV).
  void run_gemm(const DeviceMatrix& W, const float* x, int n_rows, float* y);

 private:
  cudaStream_t stream_;
  CublasHandle cublas_;
  DeviceBuffer half_x_, half_w_, workspace_;
};

}  // namespace llmwb::cuda
