// model_runner.h — what the engine asks of a device: one ModelRunner per device (vLLM v1's
// GPUModelRunner). The engine schedules, builds the step's batch once and samples; a runner
// owns everything device-side — weights in its own layout, activations, the physical KV pool —
// and executes one step batch. The engine never asks which device it has: it asks the runner
// what it can do (RunnerCapabilities).
//
// Later runners plug in here: a draft runner for speculative decoding (a second runner over the
// same block geometry), sharded runners for tensor / pipeline parallelism (one per rank behind a
// runner that fans the batch out), and architecture variants, which are ModelConfig fields read
// by the forward pass each runner already has.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runner/device_model.h"
#include "kv/block_manager.h"
#include "kv/kv_cache.h"
#include "request/forward_batch.h"
#include "runner/step_recording.h"
#include "model/llama_weights.h"
#include "format/model_file.h"
#include "llmwb/telemetry.h"

namespace llmwb {

struct TuningConfig;

struct RunnerCapabilities {
  // Samples logits rows itself (DeviceSampled) so that only the token and its probability come
  // back; with a repetition penalty too where samples_with_penalty.
  bool samples_rows = false;
  bool samples_with_penalty = false;
  // The KV cache element types its pool can hold.
  std::vector<KVDType> kv_dtypes{KVDType::F32, KVDType::F16, KVDType::INT8};
  // Honours ForwardBatch::exit_layers (the layers:K self-speculative draft).
  bool early_exit = false;
};

// Progress while a runner prepares weights: (fraction of its part, what). Returns false to cancel.
using RunnerProgress = std::function<bool(double fraction, const std::string& what)>;

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  // "cpu (avx512, 2 threads)", "cuda: NVIDIA H200, 132 SMs, 139.8 GiB"
  virtual std::string describe() const = 0;
  virtual RunnerCapabilities capabilities() const = 0;
  // Memory free now for the KV pool (after the weights), for sizing it.
  virtual uint64_t kv_memory_available() const = 0;
  // The physical KV pool: num_blocks blocks of block_size tokens, all layers, K and V
  // (KVCache::bytes_per_block each); block ids are BlockManager's.
  virtual void allocate_kv(int num_blocks, int block_size, KVDType dtype) = 0;
  // Copy-on-write: whole blocks src -> dst, before the step that writes them.
  virtual void copy_blocks(std::span<const BlockCopy> copies) = 0;
  // One forward pass over `batch`: K/V of every token into the pool, then batch.num_logit_rows
  // rows of logits; rows marked in `sampled` (only where samples_rows) come back as a token
  // and its probability instead. `record` (may be null) receives the attention weights of layer
  // `record_layer` for the sequence marked capture_attention.
  virtual void execute(const ForwardBatch& batch, float* logits, int record_layer, AttentionRecord* record,
                       DeviceSampled* sampled) = 0;
  // The token inspector: `batch` holds one sequence with one new token (its context's K/V in the
  // pool) and one logits row; runs it like execute() and records its layers into `out`.
  // Runners that cannot look inside their pass throw llmwb::Error saying so.
  virtual void inspect(const ForwardBatch& batch, float* logits, StepRecording& out);
  // What each rank of a parallel runner spent in the last step (compute, communication); empty
  // for a runner of one rank.
  virtual std::vector<RankTelemetry> rank_telemetry() const { return {}; }
};

// How a model is split across ranks: tensor x pipeline parallel sizes (EngineConfig's).
struct ParallelLayout {
  int tensor = 1;
  int pipeline = 1;
  std::string dist = "threads";   // "threads", "mpi" or "nccl" (EngineConfig::dist)
  std::string quantize;           // EngineConfig::quantize: every MPI rank must have quantized alike
  int micro_batches = 0;          // EngineConfig::pipeline_micro_batches (0: automatic)
};

// The runner for `backend` ("cpu" or "cuda"): the only place that names a device. Takes the
// weights bound to `file`, which must outlive the runner. A layout other than 1 x 1 builds the
// CPU's ParallelRunner (parallel_runner.h) or, on the cuda backend (and for dist "nccl"), the
// CUDA ranks (cuda_parallel_runner.h).
std::unique_ptr<ModelRunner> make_model_runner(const std::string& backend, int threads, const TuningConfig& tuning,
                                               ModelFile& file, LlamaWeights weights,
                                               const RunnerProgress& progress, const ParallelLayout& layout = {});

}  // namespace llmwb
