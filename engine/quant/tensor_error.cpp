#include "quant/tensor_error.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "llmwb/errors.h"

namespace llmwb {

TensorError measure_tensor_error(const TensorView& reference, const TensorView& quantized, int bins) {
  if (reference.shape != quantized.shape) throw Error(quantized.name, "shape differs from the reference tensor");
  if (bins < 1) bins = 1;
  TensorError e;
  e.name = reference.name;
  e.from = dtype_name(reference.dtype);
  e.to = dtype_name(quantized.dtype);
  e.numel = reference.numel();
  e.bytes_from = reference.row_bytes() * static_cast<uint64_t>(reference.rows());
  e.bytes_to = quantized.row_bytes() * static_cast<uint64_t>(quantized.rows());
  const int64_t rows = reference.rows(), cols = reference.cols();
  std::vector<float> x(static_cast<size_t>(cols)), q(static_cast<size_t>(cols));
  // Two passes: the first finds max |error| (the histogram's range), the second bins.
  double sum_x2 = 0, sum_e2 = 0;
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) e.histogram.assign(static_cast<size_t>(bins), 0);
    for (int64_t r = 0; r < rows; ++r) {
      dequantize_row(reference.dtype, reference.row(r), x.data(), cols);
      dequantize_row(quantized.dtype, quantized.row(r), q.data(), cols);
      for (int64_t i = 0; i < cols; ++i) {
        const double err = static_cast<double>(q[static_cast<size_t>(i)]) - x[static_cast<size_t>(i)];
        if (pass == 0) {
          sum_x2 += static_cast<double>(x[static_cast<size_t>(i)]) * x[static_cast<size_t>(i)];
          sum_e2 += err * err;
          e.max_abs = std::max(e.max_abs, std::fabs(err));
        } else {
          const double u = e.max_abs > 0 ? (err + e.max_abs) / (2 * e.max_abs) : 0.5;
          const auto b = std::clamp<int64_t>(static_cast<int64_t>(u * bins), 0, bins - 1);
          ++e.histogram[static_cast<size_t>(b)];
        }
      }
    }
  }
  e.mse = e.numel > 0 ? sum_e2 / static_cast<double>(e.numel) : 0.0;
  e.snr_db = sum_e2 > 0 ? 10.0 * std::log10(sum_x2 / sum_e2) : std::numeric_limits<double>::infinity();
  return e;
}

}  // namespace llmwb
