// cuda_runner.h — the ModelRunner on a CUDA device: CudaModel (backend/cuda) owns the weights
// uploaded once, the activations, the device KV pool and the sampling kernels; this adapter
// gives it the runner's shape. Present in every build: without CUDA, make_cuda_model throws
// naming why.
#pragma once

#include <memory>

#include "runner/model_runner.h"

namespace llmwb {

class CudaRunner final : public ModelRunner {
 public:
  CudaRunner(const TuningConfig& tuning, const ModelConfig& config, const LlamaWeights& weights);
  std::string describe() const override { return model_->describe(); }
  RunnerCapabilities capabilities() const override { return {.samples_rows = true}; }
  uint64_t kv_memory_available() const override { return model_->free_memory_bytes(); }
  void allocate_kv(int num_blocks, int block_size, KVDType dtype) override {
    model_->allocate_kv(num_blocks, block_size, dtype);
  }
  void copy_blocks(std::span<const BlockCopy> copies) override;
  void execute(const ForwardBatch& batch, float* logits, int record_layer, AttentionRecord* record,
               DeviceSampled* sampled) override {
    model_->forward(batch, logits, record_layer, record, sampled);
  }
  void inspect(const ForwardBatch& batch, float* logits, StepRecording& out) override {
    model_->inspect(batch, logits, out);
  }

 private:
  std::unique_ptr<DeviceModel> model_;
};

}  // namespace llmwb
