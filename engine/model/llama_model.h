// llama_model.h — the Llama forward pass, written once against the Backend interface.
//
// Follows llama2.c's run.c (RMSNorm -> q/k/v -> RoPE -> attention -> wo -> residual ->
// RMSNorm -> SwiGLU FFN (w1, w3, w2) -> residual; final RMSNorm; classifier), but over a
// flattened batch of many sequences' new tokens, with K/V kept in the paged KVCache. The
// architectures' variants are ModelConfig switches in that one pass: Q/K/V biases (Qwen2),
// per-head Q/K RMSNorm before RoPE (Qwen3), a head size of its own, RoPE scaling (Llama 3).
#pragma once

#include <vector>

#include "backend/backend.h"
#include "memory/huge_page_allocator.h"
#include "request/forward_batch.h"
#include "model/llama_weights.h"
#include "format/model_config.h"
#include "model/forward_observer.h"
#include "parallel/communicator.h"

namespace llmwb {

class LlamaModel {
 public:
  LlamaModel(const ModelConfig& config, LlamaWeights weights, Backend& backend);

  const ModelConfig& config() const { return config_; }
  const LlamaWeights& weights() const { return w_; }

  // Computes K/V for every token of `batch` into `cache` and writes batch.num_logit_rows rows of
  // vocab_size logits (one per sequence with logits_row >= 0). When `record` is given, the
  // attention weights of layer `record_layer` for the sequence marked capture_attention go there.
  // The last layer computes past its K/V only the rows that get logits (forward_logit_rows).
  // With `observer`, every layer's seams are reported to it (and no layer is trimmed).
  void forward(const ForwardBatch& batch, KVCache& cache, float* logits, int record_layer = -1,
               AttentionRecord* record = nullptr, ForwardObserver* observer = nullptr);
  // The final norm and the output head over n rows of the residual stream: the same operations
  // forward() ends with (the logit lens applies them after every layer).
  void head(const float* x, int n, float* logits);

  // Tensor parallelism (parallel_runner.h): this model holds one rank's shards (its heads of
  // wq/wk/wv and rows of w1/w3, the matching columns of wo and w2), so the outputs of wo and w2
  // are partial sums, all-reduced over `group` before they join the residual stream. Null (the
  // default): the whole model, no communication.
  void set_tensor_parallel(Communicator* group) { tp_ = group; }
  // Pipeline parallelism: this model holds a stage's layers. For the next forward(): `input`
  // (n x dim rows, the previous stage's residual stream) replaces the embedding when not null;
  // `output` when not null receives the residual stream after the last layer instead of the
  // final norm and head (no logits are written).
  void set_stage_io(const float* input, float* output) {
    stage_in_ = input;
    stage_out_ = output;
  }

 private:
  ModelConfig config_;
  LlamaWeights w_;
  Backend* be_;   // the backend; an observer's for the pass it observes
  Communicator* tp_ = nullptr;
  const float* stage_in_ = nullptr;
  float* stage_out_ = nullptr;
  RopeParams rope_;
  AttentionParams attn_;
  // Activations, reused between steps.
  // Activations, megabytes each at prefill: huge pages (huge_page_allocator.h).
  HugeFloatVector x_, xb_, q_, k_, v_, att_, hb_, hb2_;
  std::vector<float> last_;
  std::vector<int> positions_;
  // Q or K of n rows after its projection: + bias (attn_qkv_bias), per-head RMSNorm
  // (attn_qk_norm), then RoPE at each row's position.
  void finish_heads(float* x, int n, int heads, const std::vector<float>& bias, const std::vector<float>& norm,
                    const int* positions);
  // The rest of a layer after attention over n rows: x += wo att, then x += the SwiGLU FFN of
  // norm(x); xb, hb and hb2 are scratch.
  void output_and_ffn(const LlamaLayerWeights& L, const float* att, int n, float* x, float* xb, float* hb, float* hb2,
                      ForwardObserver* observer = nullptr, int layer = -1);
  // The last layer past K/V, over the rows that get logits only: gathered rows, their batch.
  // `l` is the last layer run (the model's last, or ForwardBatch::exit_layers - 1).
  void forward_logit_rows(const ForwardBatch& batch, KVCache& cache, int l, float* logits);
  ForwardBatch tail_;
  std::vector<int> tail_positions_;
  HugeFloatVector tail_xb_;   // the logit rows' normed input (their residual rows go in last_)
  HugeFloatVector head_xb_;   // head()'s normed rows
};

}  // namespace llmwb
