#include "runner/rank_worker.h"

#include <chrono>

#include "llmwb/errors.h"
#include "llmwb/tuning_config.h"

namespace llmwb {

namespace {
double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

RankWorker::RankWorker(const ModelConfig& c, const LlamaWeights& weights, int tp_rank, int tp_size, int stage,
                       int pp_size, int threads, const TuningConfig& tuning, Communicator& tp_group,
                       Communicator& world)
    : t_(tp_rank), tp_(tp_size), p_(stage), pp_(pp_size), tp_comm_(tp_group), world_comm_(world) {
  const auto [l0, l1] = split_range(c.n_layers, pp_, p_, 1, "pipeline_parallel_size", "the layers");
  first_layer_ = int(l0);
  shard_ = make_weight_shard(c, weights, ShardSpec{t_, tp_, int(l0), int(l1 - l0)});
  backend_ = std::make_unique<CpuBackend>(threads, tuning.float_panels);
  for (const LlamaLayerWeights& L : shard_.weights.layers)
    for (const TensorView* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w1, &L.w2, &L.w3}) backend_->prepare(*w);
  if (last_stage()) backend_->prepare(shard_.weights.output);
  model_ = std::make_unique<LlamaModel>(shard_.config, shard_.weights, *backend_);
  if (tp_ > 1) model_->set_tensor_parallel(&tp_comm_);
  last_.tp_rank = stats_.tp_rank = t_;
  last_.pp_stage = stats_.pp_stage = p_;
}

void RankWorker::allocate_kv(int num_blocks, int block_size, KVDType dtype) {
  const ModelConfig& c = shard_.config;
  kv_ = std::make_unique<KVCache>(c.n_layers, num_blocks, block_size, c.n_kv_heads, c.head_dim, dtype);
}

void RankWorker::copy_blocks(std::span<const BlockCopy> copies) {
  for (const BlockCopy& c : copies) kv_->copy_block(c.src, c.dst);
}

void RankWorker::run(const ForwardBatch& batch, int record_layer, AttentionRecord* record) {
  if (!kv_) throw Error("parallel", "allocate_kv must come before a step");
  // An early-exit draft counts layers from the model's first: a later stage cannot tell where
  // its own layers stand in it.
  if (batch.exit_layers > 0 && pp_ > 1)
    throw Error("pipeline_parallel_size", "speculative decoding's early-exit draft (layers:K) runs with "
                                          "pipeline_parallel_size 1");
  const auto t0 = std::chrono::steady_clock::now();
  const double ar0 = tp_comm_.seconds;
  const uint64_t arb0 = tp_comm_.bytes;
  const int n = static_cast<int>(batch.tokens.size());
  const int64_t rows = int64_t(n) * shard_.config.dim;
  const bool first = p_ == 0, last = last_stage();
  double recv_s = 0;
  if (!first) {
    act_in_.resize(size_t(rows));
    const auto w0 = std::chrono::steady_clock::now();
    world_comm_.recv(act_in_.data(), rows, (p_ - 1) * tp_ + t_);
    recv_s = since(w0);
  }
  if (!last) act_out_.resize(size_t(rows));
  model_->set_stage_io(first ? nullptr : act_in_.data(), last ? nullptr : act_out_.data());
  float* logits = nullptr;
  if (last) {
    logits_.resize(size_t(batch.num_logit_rows) * size_t(shard_.config.vocab_size));
    logits = logits_.data();
  }
  // The attention heatmap: only a rank that holds all of the recorded layer's heads records it
  // (tensor_parallel_size 1: the stage that holds the layer).
  const int local = record_layer - first_layer_;
  const bool mine = record && tp_ == 1 && local >= 0 && local < shard_.config.n_layers;
  model_->forward(batch, *kv_, logits, mine ? local : -1, mine ? record : nullptr);
  if (!last) world_comm_.send(act_out_.data(), rows, (p_ + 1) * tp_ + t_);
  RankTelemetry& k = last_;
  k.step_seconds = since(t0);
  k.allreduce_seconds = tp_comm_.seconds - ar0;
  k.allreduce_bytes = tp_comm_.bytes - arb0;
  k.recv_seconds = recv_s;
  k.sendrecv_bytes = pp_ > 1 ? uint64_t(rows) * sizeof(float) * uint64_t((first ? 0 : 1) + (last ? 0 : 1)) : 0;
  k.compute_seconds = k.step_seconds - k.allreduce_seconds - k.recv_seconds;
  ++stats_.steps;
  stats_.step_seconds += k.step_seconds;
  stats_.allreduce_seconds += k.allreduce_seconds;
  stats_.allreduce_bytes += k.allreduce_bytes;
  stats_.recv_seconds += k.recv_seconds;
  stats_.sendrecv_bytes += k.sendrecv_bytes;
}

}  // namespace llmwb
