#include "backend/cuda/cuda_check.h"

#include "backend/cuda/cublas_loader.h"
#include "llmwb/errors.h"

namespace llmwb::cuda {

void throw_cuda(cudaError_t e, const char* call) {
  throw Error("cuda", std::string(call) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

void throw_cublas(cublasStatus_t e, const char* call) {
  throw Error("cublas", std::string(call) + ": " + cublas().status_name(e) + " (" + cublas().status_string(e) + ")");
}

}  // namespace llmwb::cuda
