// llama_model.h — the Llama forward pass, written once against the Backend interface.
//
// Follows llama2.c's run.c (RMSNorm -> q/k/v -> RoPE -> attention -> wo -> residual ->
// RMSNorm -> SwiGLU FFN (w1, w3, w2) -> residual; final RMSNorm; classifier), but over a
// flattened batch of many sequences' new tokens, with K/V kept in the paged KVCache.
#pragma once

#include <vector>

#include "backend/backend.h"
#include "backend/huge_page_allocator.h"
#include "model/forward_batch.h"
#include "model/llama_weights.h"
#include "model/model_config.h"

namespace llmwb {

class LlamaModel {
 public:
  LlamaModel(const ModelConfig& config, LlamaWeights weights, Backend& backend);

  const ModelConfig& config() const { return config_; }
  const LlamaWeights& weights() const { return w_; }

  // Computes K/V for every token of `batch` into `cache` and writes batch.num_logit_rows rows of
  // vocab_size logits (one per sequence with logits_row >= 0). When `record` is given, the
  // attention weights of layer `record_layer` for the sequence marked capture_attention go there.
  void forward(const ForwardBatch& batch, KVCache& cache, float* logits, int record_layer = -1,
               AttentionRecord* record = nullptr);

 private:
  ModelConfig config_;
  LlamaWeights w_;
  Backend& be_;
  RopeParams rope_;
  AttentionParams attn_;
  // Activations, reused between steps.
  // Activations, megabytes each at prefill: huge pages (huge_page_allocator.h).
  HugeFloatVector x_, xb_, q_, k_, v_, att_, hb_, hb2_;
  std::vector<float> last_;
  std::vector<int> positions_;
};

}  // namespace llmwb
