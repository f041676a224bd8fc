// parallel_runner.h — tensor and pipeline parallelism on the CPU, ranks as threads of this
// process: a ModelRunner that owns tensor_parallel_size x pipeline_parallel_size RankWorkers
// (rank_worker.h: each its weight shard, its CpuBackend of threads / tensor_parallel_size
// workers, its LlamaModel and its KVCache of its stage's layers and its KV heads) and one thread
// per rank, over in-process communicators (ThreadGroup).
//
// A step: every rank runs the batch at once. Within a stage the tensor-parallel ranks all-reduce
// the partial sums of wo and w2 (two per layer); a stage passes the residual stream to the next;
// the last stage's ranks each compute their vocabulary range of the logits rows, gathered here
// into the step's logits. With pipeline_parallel_size P > 1 and micro_batches M > 1 the step's
// batch is cut into M micro-batches (micro_batches.h), which the stages run as a pipeline:
// stage p computes micro-batch i while stage p + 1 computes i - 1, so a stage idles
// (P - 1) / (M + P - 1) of the step rather than (P - 1) / P. Automatic (0) is one batch here,
// the stages in turn (micro_batch_count says why).
//
// Threads: the `threads` given are the machine's share for all ranks. The ranks of a stage
// split them (threads / TP each, the CpuBackend's pool size). While stages overlap (a step of
// M > 1) every rank computes at once, so each narrows its pool to threads / (TP x P) (at least
// one), as each stage would have its own cores or device; a step of one batch (a decode step
// too small to split, or micro_batches 1) runs the stages in turn, each with all the threads.
// The spans of every rank count from one origin: the step's start in execute().
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
  // threads: all the ranks' together (0: the hardware's); micro_batches: pipeline micro-batches
  // per step (0: automatic); weights bound to `file`, which must outlive the runner.
  ParallelRunner(int tensor_parallel_size, int pipeline_parallel_size, int threads, const TuningConfig& tuning,
                 ModelFile& file, const LlamaWeights& weights, const RunnerProgress& progress, int micro_batches = 0);
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
  // Threads each rank computes with: stages in turn / stages overlapping.
  int threads_per_rank() const { return ranks_[0]->threads(); }
  int overlap_threads_per_rank() const { return overlap_threads_; }
  std::vector<RankTotals> rank_stats() const;

 private:
  int tp_, pp_;
  int vocab_size_;
  int micro_batches_, overlap_threads_ = 1;
  std::vector<RankTelemetry> last_;   // the last step's, bubbles filled
  std::unique_ptr<ThreadGroup> world_;                    // all ranks: the stages' send / recv
  std::vector<std::unique_ptr<ThreadGroup>> tp_groups_;   // one per stage: its all-reduces
  std::vector<std::unique_ptr<RankWorker>> ranks_;        // stage-major: rank p * tp + t
  std::unique_ptr<ThreadPool> workers_;                   // one thread per rank
};

// The logits rows of a step from the last stage's vocabulary ranges: rank t's rows of
// vocab_size(t) values go to columns [vocab_begin(t), ...) of `logits` (rows of `vocab`).
void gather_vocab_ranges(const std::vector<const RankWorker*>& last_stage, int rows, int vocab, float* logits);

}  // namespace llmwb
