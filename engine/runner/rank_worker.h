// rank_worker.h — one rank of a tensor / pipeline parallel runner: its weight shard
// (weight_shards.h), its CpuBackend, its LlamaModel and its KVCache, and its part of a step over
// two communicators: its stage's tensor-parallel group (the all-reduces) and the world of all
// ranks (world rank = stage * tp_size + tp_rank), over which rank t of stage p receives the
// residual stream from rank t of stage p - 1 and sends it on to rank t of stage p + 1. The
// in-process ParallelRunner owns all the workers; under MPI each process owns one.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "kv/block_manager.h"
#include "kv/kv_cache.h"
#include "llmwb/telemetry.h"
#include "model/llama_model.h"
#include "parallel/timed_communicator.h"
#include "runner/weight_shards.h"

namespace llmwb {

struct TuningConfig;

// What one rank spent, summed over the steps so far.
struct RankStats {
  int tp_rank = 0, pp_stage = 0;
  int steps = 0;
  double step_seconds = 0;        // the rank's whole step (forward and communication)
  double allreduce_seconds = 0;   // in the tensor-parallel all-reduces (waiting included)
  uint64_t allreduce_bytes = 0;
  double recv_seconds = 0;        // waiting for the previous stage (pipeline bubble + transfer)
  uint64_t sendrecv_bytes = 0;
  double compute_seconds() const { return step_seconds - allreduce_seconds - recv_seconds; }
};

class RankWorker {
 public:
  // Throws llmwb::Error("tensor_parallel_size" / "pipeline_parallel_size", ...) for a split the
  // model does not allow. `config` and `weights`: the whole model's (the mapped file outlives this).
  RankWorker(const ModelConfig& config, const LlamaWeights& weights, int tp_rank, int tp_size, int stage, int pp_size,
             int threads, const TuningConfig& tuning, Communicator& tp_group, Communicator& world);
  void allocate_kv(int num_blocks, int block_size, KVDType dtype);
  void copy_blocks(std::span<const BlockCopy> copies);
  bool has_kv() const { return kv_ != nullptr; }
  // The rank's part of one step. On the last stage, logits() then holds batch.num_logit_rows rows
  // of this rank's vocabulary range [vocab_begin(), vocab_begin() + vocab_size()).
  void run(const ForwardBatch& batch, int record_layer, AttentionRecord* record);
  const std::vector<float>& logits() const { return logits_; }
  int vocab_begin() const { return shard_.vocab_begin; }
  int vocab_size() const { return shard_.config.vocab_size; }
  int tp_rank() const { return t_; }
  int stage() const { return p_; }
  bool last_stage() const { return p_ == pp_ - 1; }
  const RankTelemetry& last_step() const { return last_; }
  const RankStats& totals() const { return stats_; }
  std::string backend_name() const { return backend_->name(); }

 private:
  int t_, tp_, p_, pp_;
  int first_layer_ = 0;
  WeightShard shard_;
  std::unique_ptr<CpuBackend> backend_;
  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<KVCache> kv_;
  TimedCommunicator tp_comm_, world_comm_;
  std::vector<float> act_in_, act_out_, logits_;
  RankTelemetry last_;
  RankStats stats_;
};

}  // namespace llmwb
