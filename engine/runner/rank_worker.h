// rank_worker.h — one rank of a tensor / pipeline parallel runner: its weight shard
// (weight_shards.h), its CpuBackend, its LlamaModel and its KVCache, and its part of a step over
// two communicators: its stage's tensor-parallel group (the all-reduces) and the world of all
// ranks (world rank = stage * tp_size + tp_rank), over which rank t of stage p receives the
// residual stream from rank t of stage p - 1 and sends it on to rank t of stage p + 1. The
// in-process ParallelRunner owns all the workers; under MPI each process owns one.
//
// A step runs as one batch or as pipeline micro-batches (micro_batches.h): for each in order,
// receive its residual stream from the previous stage, run the stage's layers over it, send
// it on. Every rank records what it did when (RankTelemetry::spans, through a SpanLog its
// communicators write to), counted from the step's start as the runner gives it.
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
#include "runner/micro_batches.h"
#include "runner/weight_shards.h"

namespace llmwb {

struct TuningConfig;

class RankWorker {
 public:
  // Throws llmwb::Error("tensor_parallel_size" / "pipeline_parallel_size", ...) for a split the
  // model does not allow. `config` and `weights`: the whole model's (the mapped file outlives this).
  RankWorker(const ModelConfig& config, const LlamaWeights& weights, int tp_rank, int tp_size, int stage, int pp_size,
             int threads, const TuningConfig& tuning, Communicator& tp_group, Communicator& world);
  void allocate_kv(int num_blocks, int block_size, KVDType dtype);
  void copy_blocks(std::span<const BlockCopy> copies);
  bool has_kv() const { return kv_ != nullptr; }
  // The rank's part of one step: `batch` whole when `micro` is empty, else micro's micro-batches
  // of it in order (split_micro_batches(batch, m), the same on every rank). On the last stage,
  // logits() then holds batch.num_logit_rows rows of this rank's vocabulary range
  // [vocab_begin(), vocab_begin() + vocab_size()). Spans count from `origin`.
  void run(const ForwardBatch& batch, const std::vector<MicroBatch>& micro, int record_layer, AttentionRecord* record,
           SpanLog::Clock::time_point origin);
  // Threads the rank computes with while stages overlap (a step of several micro-batches);
  // a step of one batch uses all of the threads it was built with.
  void set_overlap_threads(int threads) { overlap_threads_ = threads; }
  int threads() const { return threads_; }
  // The end of the last step, seconds after its origin.
  double end_seconds() const { return end_seconds_; }
  const std::vector<float>& logits() const { return logits_; }
  int vocab_begin() const { return shard_.vocab_begin; }
  int vocab_size() const { return shard_.config.vocab_size; }
  int tp_rank() const { return t_; }
  int stage() const { return p_; }
  bool last_stage() const { return p_ == pp_ - 1; }
  // The last step's telemetry; wall_seconds and the bubble are the runner's to fill
  // (fill_bubbles), knowing every rank's end.
  const RankTelemetry& last_step() const { return last_; }
  // Adds a step's telemetry, bubble filled, to the totals.
  void count_step(const RankTelemetry& t) { totals_.add(t); }
  const RankTotals& totals() const { return totals_; }
  std::string backend_name() const { return backend_->name(); }

 private:
  int t_, tp_, p_, pp_;
  int threads_, overlap_threads_;
  int first_layer_ = 0;
  double end_seconds_ = 0;
  SpanLog log_;
  WeightShard shard_;
  std::unique_ptr<CpuBackend> backend_;
  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<KVCache> kv_;
  TimedCommunicator tp_comm_, world_comm_;
  std::vector<float> act_in_, act_out_, logits_, mb_logits_;
  RankTelemetry last_;
  RankTotals totals_;
};

// A step's wall time, bubbles and bubble fractions: ends[r] is rank r's end, seconds after the
// step's start; the wall is the latest, and a rank's bubble is the wall less its compute and
// all-reduce time.
void fill_bubbles(std::vector<RankTelemetry>& ranks, const std::vector<double>& ends);

// A RankTelemetry as floats (bit patterns) for a Communicator's send: a fixed-size head, then
// kSpanFloats per span, so that a receiver reads the head, then head's span count of spans.
constexpr int kTelemetryHeadFloats = 24;
constexpr int kSpanFloats = 6;
std::vector<float> pack_telemetry_head(const RankTelemetry& t);
std::vector<float> pack_telemetry_spans(const RankTelemetry& t);
// Reads a head into t; returns how many spans follow.
int unpack_telemetry_head(const float* head, RankTelemetry& t);
void unpack_telemetry_spans(const float* spans, int n, RankTelemetry& t);

}  // namespace llmwb
