#include "spec/model_proposer.h"

#include <algorithm>
#include <cmath>

namespace llmwb {

ModelProposer::ModelProposer(std::string name, std::unique_ptr<ModelFile> file, std::unique_ptr<ModelRunner> runner)
    : name_(std::move(name)), file_(std::move(file)), own_(std::move(runner)), runner_(*own_),
      vocab_(file_->config.vocab_size) {}

ModelProposer::ModelProposer(std::string name, ModelRunner& target, int vocab, int exit_layers)
    : name_(std::move(name)), runner_(target), vocab_(vocab), exit_layers_(exit_layers), shares_kv_(true) {}

float ModelProposer::choose(DraftSlot& s, float* row) {
  const SamplingParams& p = *s.params;
  const std::vector<int>* history = &s.seq->tokens;
  const size_t output_start = static_cast<size_t>(s.seq->num_prompt_tokens);
  if (p.repetition_penalty != 1.0f || p.presence_penalty != 0.f || p.frequency_penalty != 0.f) {
    // the penalties see the guesses so far, as the target will
    history_ = s.seq->tokens;
    history_.insert(history_.end(), s.tokens.begin(), s.tokens.end());
    history = &history_;
  }
  if (p.temperature <= 0.f) {
    const int token = sampler_.sample(row, vocab_, p, *s.rng, *history, output_start).token;
    s.tokens.push_back(token);
    if (p_min_ <= 0.f) return 1.f;
    // The draft's confidence in its argmax: softmax of the (penalized) row at that token.
    float top = row[0];
    for (int t = 1; t < vocab_; ++t) top = std::max(top, row[t]);
    double sum = 0;
    for (int t = 0; t < vocab_; ++t) sum += std::exp(double(row[t]) - top);
    return static_cast<float>(std::exp(double(row[token]) - top) / sum);
  }
  sampler_.distribution(row, vocab_, p, *history, probs_, output_start);
  const double r = s.rng->uniform();
  double cum = 0;
  int pick = -1;
  for (int t = 0; t < vocab_; ++t) {
    if (probs_[static_cast<size_t>(t)] <= 0.f) continue;
    pick = t;
    cum += probs_[static_cast<size_t>(t)];
    if (r < cum) break;
  }
  s.tokens.push_back(pick);
  s.q.insert(s.q.end(), probs_.begin(), probs_.end());
  return pick >= 0 ? probs_[static_cast<size_t>(pick)] : 0.f;
}

void ModelProposer::propose(std::span<DraftSlot> slots) {
  int kmax = 0;
  for (DraftSlot& s : slots) {
    s.tokens.clear();
    s.q.clear();
    s.doubted = false;
    kmax = std::max(kmax, s.k);
  }
  // A slot takes part in one pass per guess; it stops early where the draft doubted its guess
  // (p_min_): the doubted guess is kept, its pass being spent, and is the slot's last. A pass
  // writes the K/V of the token before its guess, so the draft's cache holds guesses - 1
  // positions past the sequence.
  std::vector<bool> stopped(slots.size(), false);
  std::vector<size_t> row_slot;
  ForwardBatch batch;
  batch.exit_layers = exit_layers_;
  std::vector<DraftSlot*> rows;
  last_passes_ = 0;
  for (int r = 0; r < kmax; ++r) {
    batch.tokens.clear();
    batch.seqs.clear();
    batch.num_logit_rows = 0;
    rows.clear();
    row_slot.clear();
    for (size_t si = 0; si < slots.size(); ++si) {
      DraftSlot& s = slots[si];
      if (s.k <= r || stopped[si]) continue;
      const Sequence& q = *s.seq;
      ForwardSeq fs;
      fs.first = static_cast<int>(batch.tokens.size());
      fs.block_table = &q.block_table;
      fs.logits_row = batch.num_logit_rows++;
      if (r == 0) {
        // The newest token, after whatever the draft has not seen yet.
        const int last = q.num_tokens() - 1;
        const int from = shares_kv_ ? last : std::min(computed_[q.seq_id], last);
        fs.start_pos = from;
        fs.n_tokens = q.num_tokens() - from;
        batch.tokens.insert(batch.tokens.end(), q.tokens.begin() + from, q.tokens.end());
      } else {
        fs.start_pos = q.num_tokens() + r - 1;
        fs.n_tokens = 1;
        batch.tokens.push_back(s.tokens.back());
      }
      batch.seqs.push_back(fs);
      rows.push_back(&s);
      row_slot.push_back(si);
    }
    if (rows.empty()) break;
    logits_.resize(static_cast<size_t>(batch.num_logit_rows) * vocab_);
    runner_.execute(batch, logits_.data(), -1, nullptr, nullptr);
    ++last_passes_;
    for (size_t i = 0; i < rows.size(); ++i) {
      DraftSlot& s = *rows[i];
      if (choose(s, logits_.data() + i * vocab_) >= p_min_) continue;
      // Doubted: kept (its pass is spent, and verifying it costs the target one token of its
      // pass), and no more guesses for this sequence this step.
      s.doubted = true;
      stopped[row_slot[i]] = true;
    }
  }
  if (!shares_kv_)
    for (size_t si = 0; si < slots.size(); ++si)
      if (!slots[si].tokens.empty())
        computed_[slots[si].seq->seq_id] =
            slots[si].seq->num_tokens() + static_cast<int>(slots[si].tokens.size()) - 1;
}

void ModelProposer::copy_blocks(std::span<const BlockCopy> copies) {
  if (!shares_kv_ && !copies.empty()) runner_.copy_blocks(copies);
}

void ModelProposer::rollback(const Sequence& seq) {
  auto it = computed_.find(seq.seq_id);
  if (it != computed_.end()) it->second = std::min(it->second, seq.num_computed_tokens);
}

}  // namespace llmwb
