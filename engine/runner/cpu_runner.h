// cpu_runner.h — the ModelRunner on the CPU: the llama2.c-style forward pass (LlamaModel) over
// CpuBackend's thread pool and SIMD kernels, with the host KVCache as the pool.
#pragma once

#include <memory>

#include "backend/cpu/cpu_backend.h"
#include "model/llama_model.h"
#include "runner/model_runner.h"

namespace llmwb {

class CpuRunner final : public ModelRunner {
 public:
  // Prepares every matrix for the CPU kernels (block-type repacks, float panels) now, layer by
  // layer, so the first request does not pay for it; `progress` after each layer (false cancels).
  CpuRunner(int threads, const TuningConfig& tuning, ModelFile& file, LlamaWeights weights,
            const RunnerProgress& progress);
  std::string describe() const override;
  RunnerCapabilities capabilities() const override { return {.early_exit = true}; }
  uint64_t kv_memory_available() const override;
  void allocate_kv(int num_blocks, int block_size, KVDType dtype) override;
  void copy_blocks(std::span<const BlockCopy> copies) override;
  void execute(const ForwardBatch& batch, float* logits, int record_layer, AttentionRecord* record,
               DeviceSampled* sampled) override;
  void inspect(const ForwardBatch& batch, float* logits, StepRecording& out) override;

 private:
  std::unique_ptr<CpuBackend> backend_;
  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<KVCache> kv_;
};

}  // namespace llmwb
