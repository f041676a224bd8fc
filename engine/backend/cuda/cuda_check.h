// cuda_check.h — every CUDA runtime and cuBLAS call is checked; a failure becomes an
// llmwb::Error naming the call ("cuda: cudaMalloc(&p, bytes): out of memory").
#pragma once

#include <string>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace llmwb::cuda {

[[noreturn]] void throw_cuda(cudaError_t e, const char* call);
[[noreturn]] void throw_cublas(cublasStatus_t e, const char* call);

inline void check(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw_cuda(e, call);
}
inline void check(cublasStatus_t e, const char* call) {
  if (e != CUBLAS_STATUS_SUCCESS) throw_cublas(e, call);
}

}  // namespace llmwb::cuda

// LLMWB_CUDA(cudaMalloc(&p, n)); LLMWB_CUDA(llmwb::cuda::rmsnorm(...)) for kernel launchers.
#define LLMWB_CUDA(call) ::llmwb::cuda::check((call), #call)
