#include "backend/cuda/cuda_device.h"

#include <cuda_runtime_api.h>

namespace llmwb::cuda {

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

std::string unavailable_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("no usable CUDA driver or device (cudaGetDeviceCount: ") + cudaGetErrorName(e) + ")";
  }
  if (n == 0) return "no CUDA device is present";
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    return "cudaGetDeviceProperties failed for device 0";
  }
  // The kernels are built as sm_90 code plus compute_90 PTX, which older GPUs cannot run.
  if (p.major < 9)
    return std::string(p.name) + " has compute capability " + std::to_string(p.major) + "." +
           std::to_string(p.minor) + "; this build's kernels need 9.0 (Hopper) or newer";
  return {};
}

std::string device_name() {
  cudaDeviceProp p{};
  if (device_count() == 0 || cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    return {};
  }
  return p.name;
}

bool device_wtype(DType t, WType* out) {
  switch (t) {
    case DType::F32: *out = WType::F32; return true;
    case DType::F16: *out = WType::F16; return true;
    case DType::BF16: *out = WType::BF16; return true;
    case DType::Q8_0: *out = WType::Q8_0; return true;
    case DType::Q4_0: *out = WType::Q4_0; return true;
    case DType::Q4_1: *out = WType::Q4_1; return true;
    case DType::INT8_ROW: *out = WType::INT8_ROW; return true;
    case DType::INT4_G32: *out = WType::INT4_G32; return true;
    case DType::INT4_G128: *out = WType::INT4_G128; return true;
    default: return false;
  }
}

}  // namespace llmwb::cuda
