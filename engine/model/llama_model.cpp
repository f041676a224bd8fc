#include "model/llama_model.h"

#include <cmath>

namespace llmwb {

LlamaModel::LlamaModel(const ModelConfig& config, LlamaWeights weights, Backend& backend)
    : config_(config), w_(std::move(weights)), be_(backend), rope_(RopeParams::from(config)) {
  attn_.n_heads = config.n_heads;
  attn_.n_kv_heads = config.n_kv_heads;
  attn_.head_dim = config.head_dim;
  attn_.scale = 1.0f / std::sqrt(static_cast<float>(config.head_dim));
}

void LlamaModel::forward(const ForwardBatch& batch, KVCache& cache, float* logits, int record_layer,
                         AttentionRecord* record) {
  const ModelConfig& c = config_;
  const int n = static_cast<int>(batch.tokens.size());
  const int64_t dim = c.dim, q_dim = int64_t(c.n_heads) * c.head_dim, kv_dim = int64_t(c.n_kv_heads) * c.head_dim;
  auto fit = [](auto& v, int64_t size) {
    if (v.size() < static_cast<size_t>(size)) v.resize(static_cast<size_t>(size));
    return v.data();
  };
  float* x = fit(x_, n * dim);
  float* xb = fit(xb_, n * dim);
  float* q = fit(q_, n * q_dim);
  float* k = fit(k_, n * kv_dim);
  float* v = fit(v_, n * kv_dim);
  float* att = fit(att_, n * q_dim);
  float* hb = fit(hb_, int64_t(n) * c.hidden_dim);
  float* hb2 = fit(hb2_, int64_t(n) * c.hidden_dim);
  positions_.resize(static_cast<size_t>(n));
  for (const ForwardSeq& s : batch.seqs)
    for (int i = 0; i < s.n_tokens; ++i) positions_[static_cast<size_t>(s.first + i)] = s.start_pos + i;

  be_.embed(w_.tok_embeddings, batch.tokens.data(), n, x);
  for (int l = 0; l < c.n_layers; ++l) {
    const LlamaLayerWeights& L = w_.layers[static_cast<size_t>(l)];
    // Attention block.
    be_.rmsnorm(x, L.attn_norm.data(), n, c.dim, c.norm_eps, xb);
    const MatmulOut qkv[] = {{&L.wq, q}, {&L.wk, k}, {&L.wv, v}};
    be_.matmul_shared_input(xb, n, qkv);
    be_.rope(q, n, c.n_heads, positions_.data(), rope_);
    be_.rope(k, n, c.n_kv_heads, positions_.data(), rope_);
    be_.store_kv(cache, l, batch, k, v);
    be_.attention(cache, l, batch, q, attn_, att, l == record_layer ? record : nullptr);
    be_.matmul(L.wo, att, n, xb);
    be_.add(x, xb, n * dim);
    // Feed-forward block: w2(silu(w1 x) * w3 x).
    be_.rmsnorm(x, L.ffn_norm.data(), n, c.dim, c.norm_eps, xb);
    const MatmulOut gate_up[] = {{&L.w1, hb}, {&L.w3, hb2}};
    be_.matmul_shared_input(xb, n, gate_up);
    be_.silu_mul(hb, hb2, int64_t(n) * c.hidden_dim);
    be_.matmul(L.w2, hb, n, xb);
    be_.add(x, xb, n * dim);
  }
  if (batch.num_logit_rows == 0) return;
  // Only the last new token of each sequence that samples needs logits (every new token when
  // the sequence asks for all_logits).
  float* last = fit(last_, int64_t(batch.num_logit_rows) * dim);
  for (const ForwardSeq& s : batch.seqs) {
    if (s.logits_row < 0) continue;
    const int first = s.all_logits ? 0 : s.n_tokens - 1;
    for (int i = first; i < s.n_tokens; ++i) {
      const float* src = x + int64_t(s.first + i) * dim;
      std::copy(src, src + dim, last + int64_t(s.logits_row + i - first) * dim);
    }
  }
  float* normed = fit(xb_, int64_t(batch.num_logit_rows) * dim);
  be_.rmsnorm(last, w_.final_norm.data(), batch.num_logit_rows, c.dim, c.norm_eps, normed);
  be_.matmul(w_.output, normed, batch.num_logit_rows, logits);
}

}  // namespace llmwb
