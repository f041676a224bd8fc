// cuda_model.h — the Llama forward pass on one CUDA device (the DeviceModel for --backend cuda).
//
// Weights are uploaded once in their stored format (F32, F16, BF16, Q8_0, Q4_0, Q4_1, INT8_ROW,
// INT4_G32/G128; other types are converted to F16 on upload); activations stay on the device;
// the KV pool lives in device memory with KVCache's layout and block ids. Per step the host
// sends one packed buffer of metadata (tokens, positions, slots, block tables, query tiles)
// and receives the logits rows (CudaMatmul does the matrix products).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/cuda_device.h"
#include "backend/cuda/cuda_matmul.h"
#include "backend/cuda/cuda_resources.h"
#include "parallel/device_communicator.h"
#include "runner/device_model.h"
#include "llmwb_kernels.h"

namespace llmwb::cuda {

class CudaModel final : public DeviceModel {
 public:
  // On CUDA device `device` (every call makes it the calling thread's current device).
  CudaModel(const ModelConfig& config, const LlamaWeights& weights,
            const TuningConfig& tuning = TuningConfig::from_environment(), int device = 0);
  ~CudaModel() override;

  // Tensor parallelism (cuda_parallel_runner.h), as LlamaModel::set_tensor_parallel: this model
  // holds one rank's shard, so the outputs of wo and w2 are partial sums, all-reduced over
  // `group` on the model's stream before they join the residual stream. Null: the whole model.
  void set_tensor_parallel(DeviceCommunicator* group) { tp_ = group; }
  // Pipeline parallelism, as LlamaModel::set_stage_io but over `world`: with recv_from >= 0 the
  // residual stream (n x dim) comes from that rank instead of the embedding; with send_to >= 0 the
  // residual stream after this stage's last layer goes to that rank instead of the final norm and
  // head (forward() then writes no logits). -1, -1: the whole model. A stage's model may be built
  // without the embedding (a later stage) or the output head (an earlier one): empty TensorViews.
  void set_pipeline_stage(DeviceCommunicator* world, int recv_from, int send_to) {
    world_ = world;
    stage_from_ = recv_from;
    stage_to_ = send_to;
  }

  std::string describe() const override;
  uint64_t free_memory_bytes() const override;
  using DeviceModel::allocate_kv;
  void allocate_kv(int num_blocks, int block_size, KVDType dtype) override;
  using DeviceModel::forward;
  void forward(const ForwardBatch& batch, float* logits, int record_layer, AttentionRecord* record,
               DeviceSampled* sampled) override;
  void copy_blocks(const std::vector<std::pair<int, int>>& src_dst) override;
  // One new token, its layers recorded: every layer's attention weights, attention and FFN
  // outputs and residual stream copied back after the layer, each layer timed with events,
  // then the model's own final norm and head applied to each residual (the logit lens).
  void inspect(const ForwardBatch& batch, float* logits, StepRecording& out) override;

  // y = W x over n_rows tokens (device pointers); public for the benchmarks.
  void matmul(const DeviceMatrix& W, const float* x, int n_rows, float* y);
  cudaStream_t stream() const { return stream_.get(); }
  // CUDA graphs for decode steps (on by default; LLMWB_CUDA_GRAPHS=0 turns them off).
  void set_use_graphs(bool on) {
    use_graphs_ = on;
    if (!on) graphs_.clear();
  }
  bool use_graphs() const { return use_graphs_; }
  size_t num_graphs() const { return graphs_.size(); }
  uint64_t weight_bytes() const { return weight_bytes_; }

 private:
  struct Layer {
    DeviceMatrix wq, wk, wv, wo, w1, w2, w3;
    const float* attn_norm = nullptr;
    const float* ffn_norm = nullptr;
    const float *bq = nullptr, *bk = nullptr, *bv = nullptr;   // attn_qkv_bias
    const float *q_norm = nullptr, *k_norm = nullptr;          // attn_qk_norm
  };
  // Q or K of n rows after its projection: + bias, per-head RMSNorm, as the config asks (RoPE
  // follows); LlamaModel::finish_heads.
  void finish_heads(float* x, int n, int heads, const float* bias, const float* norm, cudaStream_t s);
  DeviceMatrix upload(const TensorView& t);
  const float* upload_floats(const std::vector<float>& v);
  struct Graph {
    cudaGraphExec_t exec = nullptr;
    std::vector<const void*> stamp;   // the buffers it was captured with (buffer_stamp())
    Graph() = default;
    Graph(Graph&& o) noexcept : exec(std::exchange(o.exec, nullptr)), stamp(std::move(o.stamp)) {}
    Graph& operator=(Graph&&) = delete;
    ~Graph();
  };
  void ensure_rows(int n_rows, int n_logit_rows);
  // Packs and sends the step's metadata, padded to pad_to rows (graph buckets; <= rows: none).
  void upload_metadata(const ForwardBatch& batch, int pad_to);
  AttentionShape attention_shape() const;
  AttentionBatch attention_batch(int max_ctx) const;
  AttentionBatch logit_attention_batch(int max_ctx) const;
  // Whether the last layer runs past K/V for the logit rows only (LlamaModel::forward_logit_rows).
  bool trims_last_layer(int n, int nl, const ForwardSeq* rs, int record_layer) const;
  // With `tap` (the inspector's one-token pass, never captured), every layer's attention is
  // recorded and its outputs copied to the host as the pass goes.
  struct Tap;
  void enqueue(const AttentionBatch& ab, int n, int nl, const ForwardSeq* rs, int record_layer, int rec_stride,
               Tap* tap = nullptr);
  void capture(uint64_t key, const AttentionBatch& ab, int rows);
  // Addresses of every device buffer a decode step touches: a graph replays only while they
  // are the ones it was captured with.
  std::vector<const void*> buffer_stamp() const;

  // A decode step may replay a graph: not over a communicator (the host-staged one synchronizes).
  bool may_capture() const { return use_graphs_ && !tp_ && !world_; }

  ModelConfig c_;
  int device_ = 0;
  DeviceCommunicator* tp_ = nullptr;
  DeviceCommunicator* world_ = nullptr;
  int stage_from_ = -1, stage_to_ = -1;
  cudaDeviceProp prop_{};
  Stream stream_;
  CudaMatmul mm_;
  std::vector<DeviceBuffer> weights_;   // every uploaded tensor, owned
  uint64_t weight_bytes_ = 0;
  DeviceMatrix tok_embeddings_, output_;
  std::vector<Layer> layers_;
  const float* final_norm_ = nullptr;
  const double* inv_freq_ = nullptr;
  // KV pool: [layer][block][slot][kv_dim] f32, f16 (half bits) or int8 codes, K and V; int8:
  // the scales [layer][block][slot][n_kv_heads] (llmwb_kernels.h KVPool).
  DeviceBuffer k_pool_, v_pool_, k_scale_, v_scale_;
  KVPool pool_;
  int num_blocks_ = 0, block_size_ = 0;
  // Activations (grown to the largest batch seen).
  int rows_cap_ = 0, logit_rows_cap_ = 0;
  DeviceBuffer x_, xb_, xb2_, q_, k_, v_, att_, hb_, hb2_, last_, normed_, logits_, attn_ws_,
      weights_rec_;
  // Per-step metadata, packed: host (pinned) and device copies; meta_ holds the offsets.
  PinnedBuffer h_meta_, h_logits_, h_weights_rec_, h_sampled_, h_sparams_;
  DeviceBuffer d_meta_, d_pairs_, d_sampled_, d_sparams_;   // sampled rows: nl ints then nl floats; their parameters
  struct Meta {
    int n_rows = 0, n_seqs = 0, n_tiles = 0, max_ctx = 0, n_logit_rows = 0;
    size_t tokens = 0, positions = 0, row_seq = 0, seq_table = 0, tables = 0, tile_first = 0, tile_rows = 0,
           logit_src = 0, slots = 0, bytes = 0;   // byte offsets into the packed buffer
    // The logit rows as an attention batch of their own (one row per tile), for the trimmed last
    // layer; only for unpadded batches.
    bool has_logit_batch = false;
    size_t lr_pos = 0, lr_seq = 0, lr_tile_first = 0, lr_tile_rows = 0;
  } meta_;
  int64_t attn_ws_floats_ = 0, max_matrix_elems_ = 0;
  bool use_graphs_ = true;
  bool nvtx_layers_ = false;   // an NVTX range per layer (TuningConfig::nvtx_layers)
  std::map<uint64_t, Graph> graphs_;   // (rows << 32 | context bucket) -> instantiated decode step
};

}  // namespace llmwb::cuda
