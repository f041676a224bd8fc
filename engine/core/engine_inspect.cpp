// engine_inspect.cpp — the token inspector's engine side: Engine::inspect_step (one step seen
// from inside) and pausing requests.
//
// inspect_step gives the context a sequence of its own: its cached prefix comes from the prefix
// cache, the rest but the last token is computed as an ordinary prefill, then the last token
// runs once more alone with its layers recorded (the one extra forward pass). Its logits are
// the step's logits (every row is computed alone, bitwise, whatever it is batched with), so the
// sampler, given the sample's RNG as it was before that token, makes the same decision again.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/engine_impl.h"
#include "llmwb/errors.h"
#include "llmwb/flops.h"

namespace llmwb {

const char* to_string(SamplerStage s) {
  switch (s) {
    case SamplerStage::None: return "";
    case SamplerStage::RepetitionPenalty: return "repetition_penalty";
    case SamplerStage::TopK: return "top_k";
    case SamplerStage::TopP: return "top_p";
    case SamplerStage::MinP: return "min_p";
  }
  return "";
}

namespace {

double l2(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += double(x) * x;
  return std::sqrt(s);
}

// Softmax probabilities (double) of a logits row.
std::vector<double> softmax(const std::vector<float>& logits) {
  const float mx = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(logits.size());
  double sum = 0;
  for (size_t i = 0; i < logits.size(); ++i) sum += p[i] = std::exp(double(logits[i]) - mx);
  for (double& x : p) x /= sum;
  return p;
}

// Holds a sequence's blocks for the inspection and gives them back however it ends.
struct BlocksHeld {
  BlockManager& blocks;
  Sequence& seq;
  ~BlocksHeld() { blocks.release(seq); }
};

}  // namespace

StepInspection Engine::inspect_step(const InspectStepRequest& q) {
  Impl& m = *impl_;
  q.params.validate();
  const int vocab = m.file->config.vocab_size;
  const int n = static_cast<int>(q.context.size());
  if (n == 0) throw Error("inspect", "the context is empty (it holds at least the prompt's first token)");
  if (n >= m.max_model_len)
    throw Error("inspect", "the context has " + std::to_string(n) + " tokens; the context length is " +
                               std::to_string(m.max_model_len));
  for (int i = 0; i < n; ++i)
    if (q.context[size_t(i)] < 0 || q.context[size_t(i)] >= vocab)
      throw Error("inspect", "token id " + std::to_string(q.context[size_t(i)]) + " at position " +
                                 std::to_string(i) + " is outside the vocabulary");
  if (q.draws_before < 0) throw Error("inspect", "draws_before must be >= 0");

  Sequence seq;
  seq.seq_id = m.next_seq++;
  seq.request_id = 0;
  seq.tokens = q.context;
  seq.num_prompt_tokens = n;
  seq.max_total_tokens = n;
  BlockManager& blocks = *m.blocks;
  const int cached = blocks.count_cached_prefix(seq);
  if (!blocks.can_append(seq, n - cached))
    throw Error("inspect", "the KV cache has no room now for a " + std::to_string(n) +
                               "-token context; inspect when fewer requests are running");
  BlocksHeld held{blocks, seq};
  blocks.acquire_prefix(seq);
  std::vector<BlockCopy> copies;
  if (!blocks.append_slots(seq, n - seq.num_computed_tokens, &copies))
    throw Error("inspect", "the KV cache has no room now for a " + std::to_string(n) + "-token context");
  if (!copies.empty()) m.runner->copy_blocks(copies);
  // The context but its last token: prefill in chunks the step's batch size allows.
  std::vector<float> no_logits;
  while (seq.num_computed_tokens < n - 1) {
    const int chunk = std::min(n - 1 - seq.num_computed_tokens, m.cfg.max_num_batched_tokens);
    ForwardBatch b;
    ForwardSeq fs;
    fs.n_tokens = chunk;
    fs.start_pos = seq.num_computed_tokens;
    fs.block_table = &seq.block_table;
    b.tokens.assign(seq.tokens.begin() + fs.start_pos, seq.tokens.begin() + fs.start_pos + chunk);
    b.seqs.push_back(fs);
    m.runner->execute(b, no_logits.data(), -1, nullptr, nullptr);
    seq.num_computed_tokens += chunk;
    blocks.commit_computed(seq);
  }
  // The step itself: the last context token alone, recorded.
  ForwardBatch b;
  ForwardSeq fs;
  fs.n_tokens = 1;
  fs.start_pos = n - 1;
  fs.block_table = &seq.block_table;
  fs.logits_row = 0;
  fs.capture_attention = true;
  fs.decode = n > 1;
  b.tokens.push_back(q.context.back());
  b.seqs.push_back(fs);
  b.num_logit_rows = 1;
  StepInspection out;
  out.context = q.context;
  out.position = n - 1;
  out.runner = m.runner->describe();
  out.logits.resize(static_cast<size_t>(vocab));
  StepRecording rec;
  m.runner->inspect(b, out.logits.data(), rec);
  seq.num_computed_tokens = n;
  blocks.commit_computed(seq);

  // The sampler, with the sample's RNG as it was before this token.
  Rng rng(q.seed);
  for (int i = 0; i < q.draws_before; ++i) rng.uniform();
  m.sampler.trace(out.logits.data(), vocab, q.params, rng, q.context, q.top_candidates, out.sampler);
  for (SamplerCandidate& c : out.sampler.candidates) c.piece = m.tok->display(c.token);
  const int chosen = out.sampler.chosen;

  // The logit lens: per layer, the top tokens and the chosen token's rank under head(residual).
  const int lens_top = std::max(1, std::min(q.lens_top, vocab));
  for (size_t l = 0; l < rec.layers.size(); ++l) {
    const StepRecording::Layer& L = rec.layers[l];
    LensLayer ll;
    ll.layer = static_cast<int>(l);
    const std::vector<double> p = softmax(L.lens_logits);
    std::vector<int> order(static_cast<size_t>(vocab));
    std::iota(order.begin(), order.end(), 0);
    const auto by_logit = [&](int a, int b2) {
      return L.lens_logits[size_t(a)] != L.lens_logits[size_t(b2)] ? L.lens_logits[size_t(a)] > L.lens_logits[size_t(b2)]
                                                                    : a < b2;
    };
    std::partial_sort(order.begin(), order.begin() + lens_top, order.end(), by_logit);
    for (int k = 0; k < lens_top; ++k) {
      const int t = order[size_t(k)];
      ll.top.push_back({t, m.tok->display(t), p[size_t(t)]});
    }
    int rank = 0;
    for (int t = 0; t < vocab; ++t)
      if (by_logit(t, chosen)) ++rank;
    ll.chosen_rank = rank;
    ll.chosen_prob = p[size_t(chosen)];
    ll.residual_norm = l2(L.residual);
    ll.attention_norm = l2(L.attention_out);
    ll.ffn_norm = l2(L.ffn_out);
    ll.logits = L.lens_logits;
    out.lens.push_back(std::move(ll));
  }

  // Attention: this token's row in every layer and head.
  const ModelConfig& c = m.file->config;
  out.attention.n_layers = c.n_layers;
  out.attention.n_heads = c.n_heads;
  out.attention.position = n - 1;
  for (const StepRecording::Layer& L : rec.layers)
    for (int h = 0; h < c.n_heads; ++h)
      out.attention.weights.push_back(size_t(h) < L.attention.rows.size() ? L.attention.rows[size_t(h)]
                                                                          : std::vector<float>{});
  out.attention.blocks_read = seq.block_table;

  // Time: per op and layer, beside what the pass must move and compute.
  for (const auto& [key, t] : rec.ops) out.timing.ops.push_back({key.second, key.first, t.seconds, t.calls});
  out.timing.forward_seconds = rec.forward_seconds;
  out.timing.weight_bytes = double(decode_weight_bytes(m.info));
  // The K/V of n positions in every layer (whole blocks' bytes per token, scales included).
  KVDType kvt = KVDType::F32;
  kv_dtype_from_name(m.cfg.kv_dtype, &kvt);
  out.timing.kv_bytes = double(n) * double(KVCache::bytes_per_block(c.n_layers, m.cfg.block_size, c.n_kv_heads,
                                                                    c.head_dim, kvt)) / m.cfg.block_size;
  out.timing.flops = forward_flops(m.info, n - 1, 1, 1).total();
  return out;
}

}  // namespace llmwb
