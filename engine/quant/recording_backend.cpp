#include "quant/recording_backend.h"

namespace llmwb {

void RecordingBackend::rmsnorm(const float* x, const float* w, int n_rows, int dim, float eps, float* out) {
  if (recording_) {
    if (auto it = norms_.find(w); it != norms_.end()) {
      values_[it->second].assign(x, x + static_cast<int64_t>(n_rows) * dim);
    }
  }
  inner_.rmsnorm(x, w, n_rows, dim, eps, out);
}

void RecordingBackend::matmul(const TensorView& W, const float* x, int n_rows, float* y) {
  inner_.matmul(W, x, n_rows, y);
  if (recording_) values_[W.name].assign(y, y + static_cast<int64_t>(n_rows) * W.rows());
}

}  // namespace llmwb
