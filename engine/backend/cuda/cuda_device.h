// cuda_device.h — device 0 as the CUDA backend sees it: whether it can run this build's kernels,
// its name, and which stored weight types the kernels read as they are.
#pragma once

#include <string>

#include "format/tensor.h"
#include "llmwb_kernels.h"

namespace llmwb::cuda {

int device_count();                  // 0 on any error
std::string unavailable_reason();    // empty when device 0 is usable
std::string device_name();           // device 0's name ("NVIDIA H200"), "" on any error
// The kernels' name for a stored weight type; false for types converted to F16 on upload.
bool device_wtype(DType t, WType* out);

}  // namespace llmwb::cuda
