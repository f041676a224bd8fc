#include "backend/cuda/cuda_check.h"

#include "llmwb/errors.h"

namespace llmwb::cuda {

void throw_cuda(cudaError_t e, const char* call) {
  throw Error("cuda", std::string(call) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

void throw_cublas(cublasStatus_t e, const char* call) {
  throw Error("cublas", std::string(call) + ": " + cublasGetStatusName(e) + " (" + cublasGetStatusString(e) + ")");
}

}  // namespace llmwb::cuda
