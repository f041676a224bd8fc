// device_model.cpp — the accelerator factories, present in every build: without the CUDA
// toolkit they report why the backend is missing instead of failing to link.
#include "runner/device_model.h"

#include "llmwb/backends.h"
#include "llmwb/errors.h"

#if LLMWB_HAVE_CUDA
#include "runner/cuda/cuda_model.h"
#endif

namespace llmwb {

bool cuda_built() {
#if LLMWB_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

int cuda_device_count() {
#if LLMWB_HAVE_CUDA
  return cuda::device_count();
#else
  return 0;
#endif
}

std::string cuda_unavailable_reason() {
#if LLMWB_HAVE_CUDA
  return cuda::unavailable_reason();
#else
  return "this build has no CUDA backend (the CUDA toolkit was not found, or LLMWB_ENABLE_CUDA=OFF)";
#endif
}

std::vector<BackendInfo> list_backends() {
  std::vector<BackendInfo> v;
  v.push_back({"cpu", "CPU", true, {}});
  BackendInfo cuda{"cuda", "CUDA", false, cuda_unavailable_reason()};
  cuda.available = cuda.reason.empty();
#if LLMWB_HAVE_CUDA
  if (cuda.available) cuda.label = "CUDA (" + cuda::device_name() + ")";
#endif
  v.push_back(cuda);
  return v;
}

std::unique_ptr<DeviceModel> make_cuda_model(const ModelConfig& config, const LlamaWeights& weights,
                                             const TuningConfig& tuning) {
  const std::string why = cuda_unavailable_reason();
  if (!why.empty()) throw Error("backend", "'cuda' is not available: " + why);
#if LLMWB_HAVE_CUDA
  return std::make_unique<cuda::CudaModel>(config, weights, tuning);
#else
  (void)config, (void)weights, (void)tuning;
  return nullptr;
#endif
}

}  // namespace llmwb
