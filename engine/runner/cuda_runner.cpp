#include "runner/cuda_runner.h"

#include <utility>
#include <vector>

namespace llmwb {

CudaRunner::CudaRunner(const TuningConfig& tuning, const ModelConfig& config, const LlamaWeights& weights)
    : model_(make_cuda_model(config, weights, tuning)) {}

void CudaRunner::copy_blocks(std::span<const BlockCopy> copies) {
  if (copies.empty()) return;
  std::vector<std::pair<int, int>> pairs;
  pairs.reserve(copies.size());
  for (const BlockCopy& c : copies) pairs.emplace_back(c.src, c.dst);
  model_->copy_blocks(pairs);
}

}  // namespace llmwb
