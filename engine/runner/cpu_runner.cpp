#include "runner/cpu_runner.h"

#include <fstream>

#include "backend/cpu/matmul.h"
#include "llmwb/errors.h"
#include "llmwb/tuning_config.h"

namespace llmwb {

namespace {

uint64_t available_memory_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 4ull << 30;
}

}  // namespace

CpuRunner::CpuRunner(int threads, const TuningConfig& tuning, ModelFile& file, LlamaWeights weights,
                     const RunnerProgress& progress) {
  if (!tuning.simd.empty()) cpu::set_simd_level(cpu::simd_level_at_most(tuning.simd));
  backend_ = std::make_unique<CpuBackend>(threads, tuning.float_panels);
  // The block-quantized matrices (4-bit, Q8_0, k-quants) are repacked for the CPU kernels now,
  // tensor by tensor; each original's mapped pages are dropped once copied, so RSS holds one
  // copy (qrepack.h), and so is a matrix quantized at load: nothing reads its unpacked bytes
  // again (the model multiplies through the backend, which finds the copy by the view's
  // address). A head tied to the embedding is never discarded: the embedding lookup reads its
  // rows.
  auto prepare = [&](const TensorView& t) {
    backend_->prepare(t);
    if (cpu::repackable(t.dtype) && t.data != weights.tok_embeddings.data) file.discard_quantized(t.data);
  };
  auto report = [&](double f, const std::string& what) {
    if (progress && !progress(f, what)) throw Error(file.path, "loading cancelled");
  };
  // Progress (and the chance to cancel) after every layer: a 7B model takes seconds here.
  const size_t n_layers = weights.layers.size();
  for (size_t i = 0; i < n_layers; ++i) {
    report(double(i) / double(n_layers + 1), "preparing weights for the CPU kernels (layer " + std::to_string(i + 1) +
                                                 "/" + std::to_string(n_layers) + ")");
    const LlamaLayerWeights& l = weights.layers[i];
    for (const TensorView* t : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w1, &l.w2, &l.w3}) prepare(*t);
  }
  report(double(n_layers) / double(n_layers + 1), "preparing the output head for the CPU kernels");
  prepare(weights.output);
  model_ = std::make_unique<LlamaModel>(file.config, std::move(weights), *backend_);
}

std::string CpuRunner::describe() const { return backend_->name(); }

uint64_t CpuRunner::kv_memory_available() const { return available_memory_bytes(); }

void CpuRunner::allocate_kv(int num_blocks, int block_size, KVDType dtype) {
  const ModelConfig& c = model_->config();
  kv_ = std::make_unique<KVCache>(c.n_layers, num_blocks, block_size, c.n_kv_heads, c.head_dim, dtype);
}

void CpuRunner::copy_blocks(std::span<const BlockCopy> copies) {
  for (const BlockCopy& c : copies) kv_->copy_block(c.src, c.dst);
}

void CpuRunner::execute(const ForwardBatch& batch, float* logits, int record_layer, AttentionRecord* record,
                        DeviceSampled*) {
  model_->forward(batch, *kv_, logits, record_layer, record);
}

}  // namespace llmwb
