// device_model.h — the model runner seam for accelerators.
//
// The CPU path is LlamaModel over CpuBackend with the host KVCache. An accelerator backend
// instead owns the whole forward pass: its weights (uploaded once), its activations and its own
// KV pool with the same block geometry as the host KVCache (block ids from BlockManager mean
// the same blocks), and hands back only logits and, when asked, one sequence's attention
// weights. The engine calls it where it would call LlamaModel::forward and KVCache::copy_block.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kv/kv_cache.h"
#include "llmwb_kernel_types.h"
#include "request/forward_batch.h"
#include "runner/step_recording.h"
#include "model/llama_weights.h"
#include "format/model_config.h"
#include "llmwb/tuning_config.h"

namespace llmwb {

// Logits rows the device samples itself, as the CPU sampler would (RowSampling, in
// llmwb_kernel_types.h: no repetition penalty): only the token and its probability come back,
// not vocab_size floats.
struct DeviceSampled {
  std::vector<uint8_t> rows;                // per logits row: 1 = sampled on the device (that row of `logits` is not written)
  std::vector<RowSampling> params;          // per logits row (read where rows[r] is 1)
  std::vector<int> token;                   // out, per logits row
  std::vector<float> prob;                  // out
};

class DeviceModel {
 public:
  virtual ~DeviceModel() = default;
  // "cuda: NVIDIA H200, 132 SMs, 139.8 GiB"
  virtual std::string describe() const = 0;
  // Device memory free now (after the weights), for sizing the KV pool.
  virtual uint64_t free_memory_bytes() const = 0;
  // Allocates the KV pool: num_blocks blocks of block_size tokens, all layers, K and V, with
  // KVCache's element type and quantization (KVCache::bytes_per_block bytes per block).
  virtual void allocate_kv(int num_blocks, int block_size, KVDType dtype) = 0;
  void allocate_kv(int num_blocks, int block_size) { allocate_kv(num_blocks, block_size, KVDType::F32); }
  // As LlamaModel::forward, against the device's own KV pool. With `sampled`, the rows it marks
  // come back as a sampled token and its probability (sampled->token / prob) instead of logits.
  virtual void forward(const ForwardBatch& batch, float* logits, int record_layer, AttentionRecord* record,
                       DeviceSampled* sampled) = 0;
  void forward(const ForwardBatch& batch, float* logits, int record_layer, AttentionRecord* record) {
    forward(batch, logits, record_layer, record, nullptr);
  }
  // Copy-on-write: whole blocks src -> dst, all layers, K and V.
  virtual void copy_blocks(const std::vector<std::pair<int, int>>& src_dst) = 0;
  // The token inspector (ModelRunner::inspect): one new token, its layers recorded.
  virtual void inspect(const ForwardBatch& batch, float* logits, StepRecording& out) = 0;
};

// Whether this build has the CUDA backend, and how many CUDA devices the driver reports (0 when
// the build has none, no driver is loaded or no device is present; never throws).
bool cuda_built();
int cuda_device_count();
// A one-line reason why the CUDA backend cannot run here, empty when it can (for the GUI's
// tooltip and the engine's error).
std::string cuda_unavailable_reason();

// The CUDA model on device 0 (tuning: cuda_graphs, nvtx_layers); throws llmwb::Error("backend",
// ...) naming why when this build has no CUDA or no device is present, or a CUDA call fails.
std::unique_ptr<DeviceModel> make_cuda_model(const ModelConfig& config, const LlamaWeights& weights,
                                             const TuningConfig& tuning = TuningConfig::from_environment());

}  // namespace llmwb
