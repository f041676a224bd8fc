// mpi_runner.h — tensor / pipeline parallelism across processes (`mpirun -np N llmwb-cli ...
// --dist mpi`, N = tensor x pipeline parallel size). World rank 0 runs the engine as usual (it
// schedules, samples and prints) with an MpiRunner, which holds rank 0's RankWorker and, for every
// runner call, broadcasts a command with the step metadata (the flattened ForwardBatch, KV pool
// size, block copies) to the other processes; they serve those commands in run_mpi_worker(),
// each with its own RankWorker (its shard of the model file it maps itself), and the last
// stage's ranks send their vocabulary ranges of the logits to rank 0, then every rank its step's
// telemetry (spans included, timed from its own start of the step). Rank 0 chooses the step's
// pipeline micro-batches and sends the count with the batch. Any rank that fails prints
// its error and ends the whole job (MPI_Abort): no rank waits forever. Built only with LLMWB_MPI.
#pragma once

#include <memory>

#include "llmwb/engine_config.h"
#include "parallel/mpi/mpi_communicator.h"
#include "runner/model_runner.h"
#include "runner/rank_worker.h"

namespace llmwb {

class MpiRunner final : public ModelRunner {
 public:
  // Throws llmwb::Error("tensor_parallel_size", ...) when the job's process count is not
  // tensor x pipeline parallel size, or the split does not fit the model.
  MpiRunner(int tensor_parallel_size, int pipeline_parallel_size, int threads, const TuningConfig& tuning,
            ModelFile& file, const LlamaWeights& weights, const std::string& quantize, int micro_batches = 0);
  ~MpiRunner() override;
  std::string describe() const override;
  RunnerCapabilities capabilities() const override { return {}; }
  uint64_t kv_memory_available() const override;
  void allocate_kv(int num_blocks, int block_size, KVDType dtype) override;
  void copy_blocks(std::span<const BlockCopy> copies) override;
  void execute(const ForwardBatch& batch, float* logits, int record_layer, AttentionRecord* record,
               DeviceSampled* sampled) override;
  // Every rank's, gathered on rank 0 after each step.
  std::vector<RankTelemetry> rank_telemetry() const override { return last_; }

 private:
  int tp_, pp_, vocab_, micro_batches_;
  std::vector<RankTelemetry> last_;
  std::unique_ptr<MpiCommunicator> world_, tp_group_;
  std::unique_ptr<RankWorker> worker_;
  std::vector<float> buf_;
};

// A world rank other than 0: serves rank 0's commands until it exits; returns the exit code.
int run_mpi_worker(const EngineConfig& config);

}  // namespace llmwb
