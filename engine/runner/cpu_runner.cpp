#include "runner/cpu_runner.h"

#include <chrono>

#include "backend/cpu/matmul.h"
#include "backend/timing_backend.h"
#include "llmwb/errors.h"
#include "llmwb/tuning_config.h"
#include "runner/host_memory.h"

namespace llmwb {

CpuRunner::CpuRunner(int threads, const TuningConfig& tuning, ModelFile& file, LlamaWeights weights,
                     const RunnerProgress& progress) {
  cpu::apply_process_tuning(tuning);
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

uint64_t CpuRunner::kv_memory_available() const { return host_available_memory_bytes(); }

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

namespace {

// Copies what the pass reports for its one token into a StepRecording, timing every op.
class Recorder final : public ForwardObserver {
 public:
  Recorder(Backend& be, StepRecording& out, int n_layers) : timing_(be), out_(out) {
    out_.layers.assign(static_cast<size_t>(n_layers), {});
  }
  Backend* backend() override { return &timing_; }
  void begin_layer(int layer) override { timing_.set_layer(layer); }
  AttentionRecord* attention_record(int layer) override { return &out_.layers[size_t(layer)].attention; }
  void attention_output(int layer, const float* rows, int, int dim) override {
    out_.layers[size_t(layer)].attention_out.assign(rows, rows + dim);
  }
  void ffn_output(int layer, const float* rows, int, int dim) override {
    out_.layers[size_t(layer)].ffn_out.assign(rows, rows + dim);
  }
  void residual(int layer, const float* rows, int, int dim) override {
    out_.layers[size_t(layer)].residual.assign(rows, rows + dim);
  }
  const TimingBackend& timing() const { return timing_; }

 private:
  TimingBackend timing_;
  StepRecording& out_;
};

}  // namespace

void CpuRunner::inspect(const ForwardBatch& batch, float* logits, StepRecording& out) {
  if (batch.tokens.size() != 1 || batch.seqs.size() != 1 || batch.num_logit_rows != 1)
    throw Error("inspect", "records a batch of one new token with one logits row");
  const ModelConfig& c = model_->config();
  Recorder rec(*backend_, out, c.n_layers);
  const auto t0 = std::chrono::steady_clock::now();
  model_->forward(batch, *kv_, logits, -1, nullptr, &rec);
  out.forward_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const auto& [key, t] : rec.timing().totals()) out.ops[key] = {t.seconds, t.calls};
  // The logit lens: the model's own final norm and head after every layer (after the last one,
  // exactly the model's logits).
  for (StepRecording::Layer& l : out.layers) {
    l.lens_logits.resize(static_cast<size_t>(c.vocab_size));
    model_->head(l.residual.data(), 1, l.lens_logits.data());
  }
}

}  // namespace llmwb
