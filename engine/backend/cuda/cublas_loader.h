// cublas_loader.h — cuBLAS opened on first use (dlopen) instead of linked into every program.
//
// Why: linking libcublas.so made every llmwb process map libcublas and libcublasLt (~640 MiB
// of code) and apply their relocations at start, whether or not it ever touched a GPU: about
// 150 MiB of resident memory for a CPU-only run (`llmwb-cli inspect` of a 260K model: 220 MiB
// against 5 MiB without; a tinyllama F16 prefill: 2.29 against 2.14 GiB). The CUDA runtime
// stays linked (it is small); the eight cuBLAS entry points the backend calls are looked up
// here the first time a cuBLAS handle is made, i.e. only on the CUDA backend.
#pragma once

#include <cublas_v2.h>

namespace llmwb::cuda {

// cublasGemmEx with a cublasComputeType_t (C++ also sees an inline overload taking a
// cudaDataType, so decltype cannot name it).
using CublasGemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                          const void*, const void*, cudaDataType, int, const void*, cudaDataType, int,
                                          const void*, void*, cudaDataType, int, cublasComputeType_t,
                                          cublasGemmAlgo_t);

struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetWorkspace_v2) set_workspace = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  CublasGemmExFn gemm_ex = nullptr;
  decltype(&cublasGetStatusName) status_name = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
};

// The entry points, loaded once (thread-safe); throws llmwb::Error("cublas", ...) naming the
// library and the loader's message when it cannot be opened or lacks a symbol (tried again
// on the next call).
const CublasApi& cublas();

}  // namespace llmwb::cuda
