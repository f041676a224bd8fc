// tensor_error.h — how far a quantized tensor is from the one it was made from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/tensor.h"

namespace llmwb {

struct TensorError {
  std::string name;
  DType from = DType::F32, to = DType::F32;
  int64_t numel = 0;
  uint64_t bytes_from = 0, bytes_to = 0;
  double mse = 0;        // mean of (q - x)^2
  double snr_db = 0;     // 10 log10(sum x^2 / sum (q - x)^2); +inf when the tensor is exact
  double max_abs = 0;    // max |q - x|
  // Histogram of the signed error q - x over `histogram.size()` equal bins spanning
  // [-max_abs, max_abs] (an odd count, so the middle bin holds the errors near zero).
  std::vector<uint64_t> histogram;
};

// Compares `quantized` with `reference` element by element (both decoded with dequantize_row).
// Throws llmwb::Error when the shapes differ.
TensorError measure_tensor_error(const TensorView& reference, const TensorView& quantized, int bins = 21);

}  // namespace llmwb
