#include "model/llama_model.h"

#include <algorithm>
#include <cmath>
#include <span>

namespace llmwb {

namespace {

// v's data, grown to at least `size` elements (buffers reused from step to step).
template <typename V>
float* fit(V& v, int64_t size) {
  if (v.size() < static_cast<size_t>(size)) v.resize(static_cast<size_t>(size));
  return v.data();
}

// fn(s, i, row) for each new token that gets logits: token i of sequence s, logits row `row`
// (the last token of each sequence that samples; every token when it asks for all_logits).
template <typename Fn>
void for_each_logit_row(const ForwardBatch& batch, Fn fn) {
  for (const ForwardSeq& s : batch.seqs) {
    if (s.logits_row < 0) continue;
    const int from = s.all_logits ? 0 : s.n_tokens - 1;
    for (int i = from; i < s.n_tokens; ++i) fn(s, i, s.logits_row + i - from);
  }
}

// Copies the rows of src (one per new token, dim wide) that get logits to dst, in logits order.
void gather_logit_rows(const ForwardBatch& batch, const float* src, int64_t dim, float* dst) {
  for_each_logit_row(batch, [&](const ForwardSeq& s, int i, int row) {
    const float* r = src + int64_t(s.first + i) * dim;
    std::copy(r, r + dim, dst + int64_t(row) * dim);
  });
}

}  // namespace

LlamaModel::LlamaModel(const ModelConfig& config, LlamaWeights weights, Backend& backend)
    : config_(config), w_(std::move(weights)), be_(&backend), rope_(RopeParams::from(config)) {
  attn_.n_heads = config.n_heads;
  attn_.n_kv_heads = config.n_kv_heads;
  attn_.head_dim = config.head_dim;
  attn_.scale = 1.0f / std::sqrt(static_cast<float>(config.head_dim));
}

void LlamaModel::forward(const ForwardBatch& batch, KVCache& cache, float* logits, int record_layer,
                         AttentionRecord* record, ForwardObserver* observer) {
  const ModelConfig& c = config_;
  // An observer may route the pass through a backend of its own (one that times each op).
  Backend* const own = be_;
  struct Restore {
    Backend*& be;
    Backend* own;
    ~Restore() { be = own; }
  } restore{be_, own};
  if (observer && observer->backend()) be_ = observer->backend();
  if (observer) observer->begin_layer(-1);
  const int n = static_cast<int>(batch.tokens.size());
  const int64_t dim = c.dim, q_dim = int64_t(c.n_heads) * c.head_dim, kv_dim = int64_t(c.n_kv_heads) * c.head_dim;
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

  if (stage_in_)
    std::copy(stage_in_, stage_in_ + n * dim, x);
  else
    be_->embed(w_.tok_embeddings, batch.tokens.data(), n, x);
  // The last layer's K and V go into the cache for every token, but past that only the rows
  // that get logits matter: their queries, attention, output projection and FFN are all that
  // is computed there (as llama.cpp does), from rows gathered into a batch of their own. Every
  // row is computed alone, bitwise, whatever rows it is batched with, so the logits are the
  // same. Not when that layer's attention is being recorded (the heatmap wants every query).
  const int n_layers = batch.exit_layers > 0 ? std::min(batch.exit_layers, c.n_layers) : c.n_layers;
  const int last_layer = n_layers - 1;
  const bool trim = batch.num_logit_rows < n && !(record != nullptr && record_layer == last_layer) &&
                    observer == nullptr && stage_out_ == nullptr;
  for (int l = 0; l < n_layers; ++l) {
    const LlamaLayerWeights& L = w_.layers[static_cast<size_t>(l)];
    const bool trimmed = l == last_layer && trim;
    if (observer) observer->begin_layer(l);
    // Attention block (a trimmed layer's q comes later, for the logit rows only).
    be_->rmsnorm(x, L.attn_norm.data(), n, c.dim, c.norm_eps, xb);
    const MatmulOut qkv[] = {{&L.wq, q}, {&L.wk, k}, {&L.wv, v}};
    be_->matmul_shared_input(xb, n, std::span<const MatmulOut>(qkv).subspan(trimmed ? 1 : 0));
    if (!trimmed) finish_heads(q, n, c.n_heads, L.bq, L.q_norm, positions_.data());
    finish_heads(k, n, c.n_kv_heads, L.bk, L.k_norm, positions_.data());
    if (c.attn_qkv_bias) be_->add_bias(v, L.bv.data(), n, int(kv_dim));
    be_->store_kv(cache, l, batch, k, v);
    if (trimmed) {
      if (batch.num_logit_rows > 0) forward_logit_rows(batch, cache, l, logits);
      return;
    }
    AttentionRecord* rec = l == record_layer ? record : nullptr;
    if (observer && observer->attention_record(l)) rec = observer->attention_record(l);
    be_->attention(cache, l, batch, q, attn_, att, rec);
    output_and_ffn(L, att, n, x, xb, hb, hb2, observer, l);
    if (observer) observer->residual(l, x, n, c.dim);
  }
  if (observer) observer->begin_layer(-1);
  if (stage_out_) {
    std::copy(x, x + n * dim, stage_out_);
    return;
  }
  if (batch.num_logit_rows == 0) return;
  // Only the last new token of each sequence that samples needs logits (every new token when
  // the sequence asks for all_logits).
  float* last = fit(last_, int64_t(batch.num_logit_rows) * dim);
  gather_logit_rows(batch, x, dim, last);
  float* normed = fit(xb_, int64_t(batch.num_logit_rows) * dim);
  be_->rmsnorm(last, w_.final_norm.data(), batch.num_logit_rows, c.dim, c.norm_eps, normed);
  be_->matmul(w_.output, normed, batch.num_logit_rows, logits);
}

void LlamaModel::head(const float* x, int n, float* logits) {
  float* normed = fit(head_xb_, int64_t(n) * config_.dim);
  be_->rmsnorm(x, w_.final_norm.data(), n, config_.dim, config_.norm_eps, normed);
  be_->matmul(w_.output, normed, n, logits);
}

void LlamaModel::finish_heads(float* x, int n, int heads, const std::vector<float>& bias,
                              const std::vector<float>& norm, const int* positions) {
  const ModelConfig& c = config_;
  if (c.attn_qkv_bias) be_->add_bias(x, bias.data(), n, heads * c.head_dim);
  // Qwen3: each head RMS-normalized on its own (one row of head_dim per token and head).
  if (c.attn_qk_norm) be_->rmsnorm(x, norm.data(), n * heads, c.head_dim, c.norm_eps, x);
  be_->rope(x, n, heads, positions, rope_);
}

void LlamaModel::output_and_ffn(const LlamaLayerWeights& L, const float* att, int n, float* x, float* xb, float* hb,
                                float* hb2, ForwardObserver* observer, int layer) {
  const ModelConfig& c = config_;
  const int64_t dim = c.dim;
  be_->matmul(L.wo, att, n, xb);
  if (tp_) tp_->all_reduce_sum(xb, n * dim);
  if (observer) observer->attention_output(layer, xb, n, c.dim);
  be_->add(x, xb, n * dim);
  // Feed-forward block: w2(silu(w1 x) * w3 x).
  be_->rmsnorm(x, L.ffn_norm.data(), n, c.dim, c.norm_eps, xb);
  const MatmulOut gate_up[] = {{&L.w1, hb}, {&L.w3, hb2}};
  be_->matmul_shared_input(xb, n, gate_up);
  be_->silu_mul(hb, hb2, int64_t(n) * c.hidden_dim);
  be_->matmul(L.w2, hb, n, xb);
  if (tp_) tp_->all_reduce_sum(xb, n * dim);
  if (observer) observer->ffn_output(layer, xb, n, c.dim);
  be_->add(x, xb, n * dim);
}

void LlamaModel::forward_logit_rows(const ForwardBatch& batch, KVCache& cache, int l, float* logits) {
  const LlamaLayerWeights& L = w_.layers[static_cast<size_t>(l)];
  const ModelConfig& c = config_;
  const int m = batch.num_logit_rows;
  const int64_t dim = c.dim;
  // The rows that get logits, gathered in logits order: a batch of their own whose sequences
  // start where their first such row is (same block tables: K/V of every row are stored).
  tail_.seqs.clear();
  tail_.step = batch.step ? batch.step | (uint64_t{1} << 63) : 0;
  tail_.tokens.assign(static_cast<size_t>(m), 0);
  tail_.num_logit_rows = m;
  tail_positions_.assign(static_cast<size_t>(m), 0);
  for (const ForwardSeq& s : batch.seqs) {
    if (s.logits_row < 0) continue;
    const int from = s.all_logits ? 0 : s.n_tokens - 1;
    ForwardSeq t = s;
    t.first = s.logits_row;
    t.n_tokens = s.n_tokens - from;
    t.start_pos = s.start_pos + from;
    t.capture_attention = false;
    tail_.seqs.push_back(t);
  }
  for_each_logit_row(batch, [&](const ForwardSeq& s, int i, int row) {
    tail_.tokens[static_cast<size_t>(row)] = batch.tokens[static_cast<size_t>(s.first + i)];
    tail_positions_[static_cast<size_t>(row)] = s.start_pos + i;
  });
  float* xr = fit(last_, int64_t(m) * dim);       // the residual stream, as forward() gathers it
  float* xn = fit(tail_xb_, int64_t(m) * dim);
  gather_logit_rows(batch, x_.data(), dim, xr);
  gather_logit_rows(batch, xb_.data(), dim, xn);   // this layer's normed input
  // q_, att_, hb_ and hb2_ hold a row per new token and are free here: m rows fit.
  float* q = q_.data();
  float* att = att_.data();
  float* hb = hb_.data();
  float* hb2 = hb2_.data();
  be_->matmul(L.wq, xn, m, q);
  finish_heads(q, m, c.n_heads, L.bq, L.q_norm, tail_positions_.data());
  be_->attention(cache, l, tail_, q, attn_, att, nullptr);
  output_and_ffn(L, att, m, xr, xn, hb, hb2);
  be_->rmsnorm(xr, w_.final_norm.data(), m, c.dim, c.norm_eps, xn);
  be_->matmul(w_.output, xn, m, logits);
}

}  // namespace llmwb
