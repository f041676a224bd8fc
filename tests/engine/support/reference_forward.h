// reference_forward.h — the plainest possible Llama forward pass, in float64, one token at a
// time with a contiguous KV cache: the ground truth the engine's logits are checked against.
#pragma once

#include <vector>

#include "format/model_file.h"

namespace llmwb::test {

class ReferenceLlama {
 public:
  explicit ReferenceLlama(const ModelFile& file);
  // Feeds one token at the next position; returns the logits for the next token.
  std::vector<double> step(int token);
  int position() const { return pos_; }

 private:
  std::vector<double> mat(const std::string& name) const;   // dequantized to double
  ModelConfig c_;
  struct Layer {
    std::vector<double> attn_norm, wq, wk, wv, wo, ffn_norm, w1, w2, w3;
    std::vector<std::vector<double>> k_cache, v_cache;   // [pos][kv_dim]
  };
  const ModelFile& f_;
  std::vector<double> emb_, final_norm_, out_;
  std::vector<Layer> layers_;
  int pos_ = 0;
};

}  // namespace llmwb::test
