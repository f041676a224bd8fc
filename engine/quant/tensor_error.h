// tensor_error.h — how far a quantized tensor is from the one it was made from.
#pragma once

#include "llmwb/quant_report.h"   // TensorError
#include "format/tensor.h"

namespace llmwb {

// Compares `quantized` with `reference` element by element (both decoded with dequantize_row).
// Throws llmwb::Error when the shapes differ.
TensorError measure_tensor_error(const TensorView& reference, const TensorView& quantized, int bins = 21);

}  // namespace llmwb
