// parallel_runner.h — tensor and pipeline parallelism on the CPU: a ModelRunner that owns
// tensor_parallel_size x pipeline_parallel_size ranks, each a thread with its own CpuBackend
// (threads / tensor_parallel_size workers), its own LlamaModel over its weight shard
// (weight_shards.h) and its own KVCache holding its stage's layers and its KV heads.
//
// A step: every rank runs the batch at once. Within a stage the tensor-parallel ranks all-reduce
// the partial sums of wo and w2 (two per layer) over their group's Communicator; a stage > 0
// first receives the residual stream from its peer of the stage before (rank t of stage p from
// rank t of stage p - 1) and a stage before the last sends it on. The last stage's ranks each
// compute their vocabulary range of the logits rows, which are gathered into the step's logits.
// Stages run one after the other for a step (no micro-batches yet: with pipeline_parallel_size
// P, each rank idles (P - 1) / P of a step — the bubble, measured in rank_stats()).
// Communication is in-process (ThreadGroup); a rank that throws aborts the groups so that no
// rank waits forever, and the step throws its error.
#pragma once

#include <exception>
#include <memory>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/thread_pool.h"
#include "model/llama_model.h"
#include "parallel/thread_communicator.h"
#include "parallel/timed_communicator.h"
#include "runner/model_runner.h"
#include "runner/weight_shards.h"

namespace llmwb {

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

class ParallelRunner final : public ModelRunner {
 public:
  // threads: all the ranks' together (0: the hardware's); weights bound to `file`, which must
  // outlive the runner. Throws llmwb::Error("tensor_parallel_size" / "pipeline_parallel_size", ...)
  // for a split the model does not allow.
  ParallelRunner(int tensor_parallel_size, int pipeline_parallel_size, int threads, const TuningConfig& tuning,
                 ModelFile& file, const LlamaWeights& weights, const RunnerProgress& progress);
  ~ParallelRunner() override;
  std::string describe() const override;
  RunnerCapabilities capabilities() const override { return {}; }
  uint64_t kv_memory_available() const override;
  void allocate_kv(int num_blocks, int block_size, KVDType dtype) override;
  void copy_blocks(std::span<const BlockCopy> copies) override;
  void execute(const ForwardBatch& batch, float* logits, int record_layer, AttentionRecord* record,
               DeviceSampled* sampled) override;

  int tensor_parallel_size() const { return tp_; }
  int pipeline_parallel_size() const { return pp_; }
  std::vector<RankStats> rank_stats() const;
  std::vector<RankTelemetry> rank_telemetry() const override;

 private:
  struct Rank;
  void run_rank(Rank& r, const ForwardBatch& batch, int record_layer, AttentionRecord* record);
  int tp_, pp_;
  int vocab_size_;
  int threads_per_rank_ = 1;
  std::vector<std::unique_ptr<Rank>> ranks_;   // stage-major: rank p * tp + t
  std::unique_ptr<ThreadGroup> world_;         // all ranks: the stages' send / recv
  std::vector<std::unique_ptr<ThreadGroup>> tp_groups_;   // one per stage: its all-reduces
  std::unique_ptr<ThreadPool> workers_;        // one thread per rank
};

}  // namespace llmwb
