// emu_cublas.cpp — the cuBLAS entry points the backend binds (engine/backend/cuda/cublas_loader.h),
// computed on the CPU with the same column-major conventions, argument checks and stream
// ordering (the product runs on the handle's stream, and is recorded while it is captured).
// Sums are taken in double: the tests' tolerances are for any correct fp32-accumulating GEMM.
#include <cstring>
#include <memory>
#include <vector>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "emu.h"

struct cublasContext {
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

namespace {

float load(const void* base, cudaDataType t, size_t i) {
  switch (t) {
    case CUDA_R_32F: return static_cast<const float*>(base)[i];
    case CUDA_R_16F: return __half2float(static_cast<const __half*>(base)[i]);
    case CUDA_R_16BF: return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]);
    default: return 0.0f;
  }
}

void store(void* base, cudaDataType t, size_t i, float v) {
  switch (t) {
    case CUDA_R_32F: static_cast<float*>(base)[i] = v; break;
    case CUDA_R_16F: static_cast<__half*>(base)[i] = __float2half_rn(v); break;
    case CUDA_R_16BF: static_cast<__nv_bfloat16*>(base)[i] = __float2bfloat16_rn(v); break;
    default: break;
  }
}

size_t elem_bytes(cudaDataType t) { return t == CUDA_R_32F ? 4 : 2; }

// Bytes a column-major operand spans: `cols` columns of leading dimension ld, the last `rows` long.
size_t span(int rows, int cols, int ld, cudaDataType t) {
  if (rows <= 0 || cols <= 0) return 0;
  return (size_t(cols - 1) * size_t(ld) + size_t(rows)) * elem_bytes(t);
}

cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha,
                    const void* A, cudaDataType at, int lda, const void* B, cudaDataType bt, int ldb, float beta, void* C,
                    cudaDataType ct, int ldc) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (m < 0 || n < 0 || k < 0) return CUBLAS_STATUS_INVALID_VALUE;
  if ((ta != CUBLAS_OP_N && ta != CUBLAS_OP_T) || (tb != CUBLAS_OP_N && tb != CUBLAS_OP_T))
    return CUBLAS_STATUS_INVALID_VALUE;
  const int a_rows = ta == CUBLAS_OP_N ? m : k, a_cols = ta == CUBLAS_OP_N ? k : m;
  const int b_rows = tb == CUBLAS_OP_N ? k : n, b_cols = tb == CUBLAS_OP_N ? n : k;
  if (lda < std::max(1, a_rows) || ldb < std::max(1, b_rows) || ldc < std::max(1, m)) return CUBLAS_STATUS_INVALID_VALUE;
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  // Every operand must lie in device memory (a GPU would fault on the product's first read).
  if ((k > 0 && (!llmwb::emu::is_device_range(A, span(a_rows, a_cols, lda, at)) ||
                 !llmwb::emu::is_device_range(B, span(b_rows, b_cols, ldb, bt)))) ||
      !llmwb::emu::is_device_range(C, span(m, n, ldc, ct)))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  (void)llmwb::emu::enqueue(h->stream, [=] {
    std::vector<double> col(static_cast<size_t>(m));
    for (int j = 0; j < n; ++j) {
      std::fill(col.begin(), col.end(), 0.0);
      for (int p = 0; p < k; ++p) {
        const double b = load(B, bt, tb == CUBLAS_OP_N ? size_t(p) + size_t(j) * ldb : size_t(j) + size_t(p) * ldb);
        if (b == 0.0) continue;
        for (int i = 0; i < m; ++i)
          col[i] += b * load(A, at, ta == CUBLAS_OP_N ? size_t(i) + size_t(p) * lda : size_t(p) + size_t(i) * lda);
      }
      for (int i = 0; i < m; ++i) {
        const size_t at_c = size_t(i) + size_t(j) * ldc;
        const double prev = beta == 0.0f ? 0.0 : double(beta) * load(C, ct, at_c);   // beta 0: C is not read
        store(C, ct, at_c, static_cast<float>(double(alpha) * col[i] + prev));
      }
    }
  });
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* h) {
  *h = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t h) {
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  h->stream = s;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t h, void* ws, size_t bytes) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (bytes && !llmwb::emu::is_device_range(ws, bytes)) return CUBLAS_STATUS_INVALID_VALUE;
  h->workspace = ws;
  h->workspace_bytes = bytes;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                              const float* alpha, const float* A, int lda, const float* B, int ldb, const float* beta,
                              float* C, int ldc) {
  return gemm(h, ta, tb, m, n, k, *alpha, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, *beta, C, CUDA_R_32F, ldc);
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void* alpha, const void* A, cudaDataType at, int lda, const void* B, cudaDataType bt,
                            int ldb, const void* beta, void* C, cudaDataType ct, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t) {
  const auto ok = [](cudaDataType t) { return t == CUDA_R_32F || t == CUDA_R_16F || t == CUDA_R_16BF; };
  if (!ok(at) || !ok(bt) || !ok(ct) || at != bt) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (compute != CUBLAS_COMPUTE_32F && compute != CUBLAS_COMPUTE_32F_PEDANTIC) return CUBLAS_STATUS_NOT_SUPPORTED;
  // CUBLAS_COMPUTE_32F takes fp32 scalars.
  return gemm(h, ta, tb, m, n, k, *static_cast<const float*>(alpha), A, at, lda, B, bt, ldb,
              *static_cast<const float*>(beta), C, ct, ldc);
}

const char* cublasGetStatusName(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "CUBLAS_STATUS_UNKNOWN";
  }
}

const char* cublasGetStatusString(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid value was used as an argument";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute (an operand outside device memory)";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    default: return "emulated cuBLAS error";
  }
}

}  // extern "C"
