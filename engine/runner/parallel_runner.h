// parallel_runner.h — tensor and pipeline parallelism on the CPU, ranks as threads of this
// process: a ModelRunner that owns tensor_parallel_size x pipeline_parallel_size RankWorkers
// (rank_worker.h: each its weight shard, its CpuBackend of threads / tensor_parallel_size
// workers, its LlamaModel and its KVCache of its stage's layers and its KV heads) and one thread
// per rank, over in-process communicators (ThreadGroup).
//
// A step: every rank runs the batch at once. Within a stage the tensor-parallel ranks all-reduce
// the partial sums of wo and w2 (two per layer); a stage passes the residual stream to the next;
// the last stage's ranks each compute their vocabulary range of the logits rows, gathered here
// into the step's logits. Stages run one after the other (no micro-batches yet: with
// pipeline_parallel_size P each rank idles (P - 1) / P of a step, measured in rank_telemetry()).
// A rank that throws aborts the groups so that no rank waits forever, and the step throws its
// error (the runner is unusable after that).
#pragma once

#include <memory>
#include <vector>

#include "backend/cpu/thread_pool.h"
#include "parallel/thread_communicator.h"
#include "runner/model_runner.h"
#include "runner/rank_worker.h"

namespace llmwb {

class ParallelRunner final : public ModelRunner {
 public:
  // threads: all the ranks' together (0: the hardware's); weights bound to `file`, which must
  // outlive the runner.
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
  std::vector<RankTelemetry> rank_telemetry() const override;

  int tensor_parallel_size() const { return tp_; }
  int pipeline_parallel_size() const { return pp_; }
  std::vector<RankStats> rank_stats() const;

 private:
  int tp_, pp_;
  int vocab_size_;
  std::unique_ptr<ThreadGroup> world_;                    // all ranks: the stages' send / recv
  std::vector<std::unique_ptr<ThreadGroup>> tp_groups_;   // one per stage: its all-reduces
  std::vector<std::unique_ptr<RankWorker>> ranks_;        // stage-major: rank p * tp + t
  std::unique_ptr<ThreadPool> workers_;                   // one thread per rank
};

// The logits rows of a step from the last stage's vocabulary ranges: rank t's rows of
// vocab_size(t) values go to columns [vocab_begin(t), ...) of `logits` (rows of `vocab`).
void gather_vocab_ranges(const std::vector<const RankWorker*>& last_stage, int rows, int vocab, float* logits);

}  // namespace llmwb
