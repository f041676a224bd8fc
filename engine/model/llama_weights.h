// llama_weights.h — the tensors of a Llama-family model, bound by name and checked by shape.
// Matrices stay views into the model file (names from llama2.c's run.c in the comments);
// the tiny norm vectors are converted to f32 once.
#pragma once

#include <vector>

#include "format/model_file.h"

namespace llmwb {

struct LlamaLayerWeights {
  std::vector<float> attn_norm;   // rms_att_weight {dim}
  TensorView wq, wk, wv, wo;      // attn_q {n_heads*hd, dim}, attn_k/v {n_kv*hd, dim}, attn_output {dim, n_heads*hd}
  std::vector<float> bq, bk, bv;  // attn_q/k/v.bias {n_heads*hd}, {n_kv*hd}: attn_qkv_bias only, else empty
  std::vector<float> q_norm, k_norm;   // attn_q_norm/attn_k_norm.weight {hd}: attn_qk_norm only, else empty
  std::vector<float> ffn_norm;    // rms_ffn_weight {dim}
  TensorView w1, w2, w3;          // ffn_gate {hidden, dim}, ffn_down {dim, hidden}, ffn_up {hidden, dim}
};

struct LlamaWeights {
  TensorView tok_embeddings;      // token_embd {vocab, dim}
  std::vector<LlamaLayerWeights> layers;
  std::vector<float> final_norm;  // output_norm {dim}
  TensorView output;              // output {vocab, dim}, or the embedding when tied

  // Binds every tensor of `file`; throws llmwb::Error naming the file and the tensor when one
  // is missing, has the wrong shape, or has a type the kernels cannot use.
  static LlamaWeights bind(const ModelFile& file);
};

}  // namespace llmwb
