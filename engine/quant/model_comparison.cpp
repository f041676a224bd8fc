#include "quant/model_comparison.h"

#include <algorithm>
#include <cmath>

#include "backend/cpu/cpu_backend.h"
#include "kv/kv_cache.h"
#include "llmwb/errors.h"
#include "model/llama_model.h"
#include "quant/recording_backend.h"

namespace llmwb {

namespace {

constexpr int kBlockSize = 16;

// log-softmax in double: the KL divergence of two close distributions is a small difference
// of large terms.
void log_softmax(const float* logits, int n, std::vector<double>& out) {
  out.resize(static_cast<size_t>(n));
  const double mx = *std::max_element(logits, logits + n);
  double s = 0;
  for (int i = 0; i < n; ++i) s += std::exp(logits[i] - mx);
  const double lse = mx + std::log(s);
  for (int i = 0; i < n; ++i) out[static_cast<size_t>(i)] = logits[i] - lse;
}

int argmax(const float* v, int n) { return static_cast<int>(std::max_element(v, v + n) - v); }

double rel_err(const std::vector<float>& ref, const std::vector<float>& q) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size() && i < q.size(); ++i) {
    num += (static_cast<double>(q[i]) - ref[i]) * (static_cast<double>(q[i]) - ref[i]);
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace

// One model with its own KV cache (one sequence of up to max_seq_len positions) and a recorder.
struct ModelComparison::Runner {
  RecordingBackend rec;
  LlamaModel model;
  KVCache kv;
  std::vector<int> table;
  std::vector<float> logits;

  Runner(const ModelConfig& c, LlamaWeights w, Backend& be)
      : rec(be),
        model(c, std::move(w), rec),
        kv(c.n_layers, (c.max_seq_len + kBlockSize - 1) / kBlockSize, kBlockSize, c.n_kv_heads, c.head_dim) {
    for (int b = 0; b < kv.num_blocks(); ++b) table.push_back(b);
    const LlamaWeights& mw = model.weights();
    for (size_t l = 1; l < mw.layers.size(); ++l) rec.watch_norm(mw.layers[l].attn_norm.data(), "layer " + std::to_string(l - 1));
    rec.watch_norm(mw.final_norm.data(), "layer " + std::to_string(mw.layers.size() - 1));
  }

  // Appends `tokens` at `start_pos`; logits for every token (all) or the last one.
  const float* forward(const int* tokens, int n, int start_pos, bool all) {
    ForwardBatch b;
    b.tokens.assign(tokens, tokens + n);
    ForwardSeq s;
    s.first = 0;
    s.n_tokens = n;
    s.start_pos = start_pos;
    s.block_table = &table;
    s.logits_row = 0;
    s.all_logits = all;
    b.seqs.push_back(s);
    b.num_logit_rows = all ? n : 1;
    logits.resize(static_cast<size_t>(b.num_logit_rows) * static_cast<size_t>(model.config().vocab_size));
    model.forward(b, kv, logits.data());
    return logits.data();
  }
};

ModelComparison::ModelComparison(const ModelConfig& config, LlamaWeights ref, LlamaWeights quant, int n_threads)
    : ModelComparison(config, std::move(ref), config, std::move(quant), n_threads) {}

ModelComparison::ModelComparison(const ModelConfig& ref_config, LlamaWeights ref, const ModelConfig& quant_config,
                                 LlamaWeights quant, int n_threads)
    : config_(ref_config) {
  const ModelConfig &a = ref_config, &b = quant_config;
  if (a.vocab_size != b.vocab_size || a.max_seq_len != b.max_seq_len || a.dim != b.dim || a.n_layers != b.n_layers ||
      a.bos_id != b.bos_id) {
    throw Error("ModelComparison", "the two models differ in vocabulary, context, width, depth or BOS id");
  }
  // Two CPU backends (thread pools) would fight for the same cores; the runners share one.
  backend_ = std::make_unique<CpuBackend>(n_threads);
  ref_ = std::make_unique<Runner>(ref_config, std::move(ref), *backend_);
  quant_ = std::make_unique<Runner>(quant_config, std::move(quant), *backend_);
}

ModelComparison::~ModelComparison() = default;

TextScore ModelComparison::score_text(const std::vector<int>& tokens, int window, const std::function<void(double)>& progress) {
  const int ctx = std::max(2, std::min(window > 0 ? window : config_.max_seq_len, config_.max_seq_len));
  const int vocab = config_.vocab_size;
  TextScore s;
  double nll_ref = 0, nll_q = 0, kl_sum = 0;
  int agree = 0;
  std::vector<double> lr, lq;
  std::vector<float> ref_logits;
  for (size_t start = 0; start < tokens.size(); start += static_cast<size_t>(ctx - 1)) {
    const size_t m = std::min(tokens.size() - start, static_cast<size_t>(ctx - 1));
    std::vector<int> win{config_.bos_id};
    win.insert(win.end(), tokens.begin() + static_cast<std::ptrdiff_t>(start),
               tokens.begin() + static_cast<std::ptrdiff_t>(start + m));
    const int n = static_cast<int>(win.size());
    const float* r = ref_->forward(win.data(), n, 0, true);
    ref_logits.assign(r, r + static_cast<size_t>(n) * static_cast<size_t>(vocab));
    const float* q = quant_->forward(win.data(), n, 0, true);
    // Row p predicts the token at p + 1.
    for (int p = 0; p + 1 < n; ++p) {
      const float* rp = ref_logits.data() + static_cast<size_t>(p) * static_cast<size_t>(vocab);
      const float* qp = q + static_cast<size_t>(p) * static_cast<size_t>(vocab);
      log_softmax(rp, vocab, lr);
      log_softmax(qp, vocab, lq);
      const auto next = static_cast<size_t>(win[static_cast<size_t>(p + 1)]);
      nll_ref -= lr[next];
      nll_q -= lq[next];
      double kl = 0;
      for (int i = 0; i < vocab; ++i) kl += std::exp(lr[static_cast<size_t>(i)]) * (lr[static_cast<size_t>(i)] - lq[static_cast<size_t>(i)]);
      kl_sum += kl;
      s.kl_max = std::max(s.kl_max, kl);
      agree += argmax(rp, vocab) == argmax(qp, vocab);
      ++s.n_scored;
    }
    ++s.n_windows;
    if (progress) progress(static_cast<double>(start + m) / static_cast<double>(tokens.size()));
  }
  if (s.n_scored == 0) throw Error("score_text", "the text has no tokens to score");
  s.ppl_ref = std::exp(nll_ref / s.n_scored);
  s.ppl_quant = std::exp(nll_q / s.n_scored);
  s.kl_mean = kl_sum / s.n_scored;
  s.top1_agreement = static_cast<double>(agree) / s.n_scored;
  return s;
}

GreedyAgreement ModelComparison::greedy(const std::vector<int>& prompt, int n_new, const std::function<void(double)>& progress) {
  if (prompt.empty()) throw Error("greedy", "empty prompt");
  const int vocab = config_.vocab_size;
  const int n = std::max(0, std::min(n_new, config_.max_seq_len - static_cast<int>(prompt.size())));
  GreedyAgreement g;
  for (Runner* r : {ref_.get(), quant_.get()}) {
    std::vector<int>& out = r == ref_.get() ? g.ref : g.quant;
    int tok = argmax(r->forward(prompt.data(), static_cast<int>(prompt.size()), 0, false), vocab);
    for (int i = 0; i < n; ++i) {
      out.push_back(tok);
      if (i + 1 < n) tok = argmax(r->forward(&tok, 1, static_cast<int>(prompt.size()) + i, false), vocab);
      if (progress) progress((r == ref_.get() ? 0.0 : 0.5) + 0.5 * (i + 1) / n);
    }
  }
  g.n_tokens = n;
  for (int i = 0; i < n; ++i) {
    if (g.ref[static_cast<size_t>(i)] == g.quant[static_cast<size_t>(i)]) {
      ++g.n_same;
    } else if (g.first_divergence < 0) {
      g.first_divergence = i;
    }
  }
  return g;
}

std::vector<OutputError> ModelComparison::output_errors(const std::vector<int>& tokens) {
  const int n = std::min(static_cast<int>(tokens.size()), config_.max_seq_len);
  if (n == 0) throw Error("output_errors", "no calibration tokens");
  for (Runner* r : {ref_.get(), quant_.get()}) {
    r->rec.clear();
    r->rec.set_recording(true);
    r->forward(tokens.data(), n, 0, true);   // all rows, so the final norm sees every token
    r->rec.set_recording(false);
  }
  std::vector<OutputError> out;
  const auto& rv = ref_->rec.values();
  const auto& qv = quant_->rec.values();
  for (int l = 0; l < config_.n_layers; ++l) {
    const std::string label = "layer " + std::to_string(l);
    if (rv.count(label) && qv.count(label)) out.push_back({label, rel_err(rv.at(label), qv.at(label))});
  }
  const LlamaWeights& w = ref_->model.weights();
  for (const LlamaLayerWeights& L : w.layers) {
    for (const TensorView* t : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w1, &L.w3, &L.w2}) {
      if (rv.count(t->name) && qv.count(t->name)) out.push_back({t->name, rel_err(rv.at(t->name), qv.at(t->name))});
    }
  }
  if (rv.count(w.output.name) && qv.count(w.output.name)) {
    out.push_back({w.output.name, rel_err(rv.at(w.output.name), qv.at(w.output.name))});
  }
  return out;
}

}  // namespace llmwb
