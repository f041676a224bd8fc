// draft_length.h — how many tokens a sequence drafts next step: a fixed k, or adaptive.
//
// Adaptive (`--spec-k auto`), as llama.cpp's p-min and vLLM's dynamic speculation do in their
// spirit: k starts at 3, grows by one after a round where every guess was accepted and drops to
// one past the accepted prefix after a rejection, between 1 and kMaxAuto (a round the draft cut
// short after a doubted guess leaves k as it is where only that guess was rejected). The
// sequence stops speculating where it does not pay:
// - by cost, once the engine's SpecCost knows what a pass costs: with this sequence's
//   acceptance taken as a per-guess probability alpha (the guesses it had tested, recent ones
//   weighted more), a round of k guesses yields E(k) = 1 + alpha + ... + alpha^k tokens and
//   takes, as this sequence's share of a step of n decoding sequences,
//   T(k) = (a + c k) / n + b (1 + k) (SpecCost: the target's fixed and per-token cost, one
//   draft pass); where no k of 1..kMaxAuto beats a plain step (1 / T(0)) by kMinGain, the
//   verify and the draft cost more than the tokens they yield (weighed once the sequence has
//   had kMinTested guesses tested);
// - and, before the costs are known, where the running acceptance rate falls below kOffBelow.
// Off: the sequence decodes plainly for a back-off that doubles each time (8, 16, ... 256
// steps), then tries again with kProbe guesses.
#pragma once

#include <algorithm>

#include "spec/spec_cost.h"

namespace llmwb {

class DraftLength {
 public:
  static constexpr int kMaxAuto = 8;
  static constexpr double kOffBelow = 0.2;
  static constexpr double kMinGain = 1.03;
  static constexpr int kProbe = 2;

  explicit DraftLength(int fixed_k = 0) : fixed_(fixed_k), k_(fixed_k > 0 ? fixed_k : 3) {}

  // Draft slots to ask for this step (0: not speculating now). Counts down a back-off. With
  // `cost` ready, off where no length pays in a step of `sequences` decoding sequences.
  int next(const SpecCost* cost = nullptr, int sequences = 1) {
    if (fixed_ > 0) return fixed_;
    if (off_steps_ > 0) {
      --off_steps_;
      return 0;
    }
    if (probe_) return kProbe;
    if (cost != nullptr && cost->ready() && tested_ >= kMinTested &&
        best_length(alpha(), cost->fixed(), cost->per_token(), cost->draft_pass(), sequences) == 0) {
      switch_off();
      --off_steps_;   // this step is the back-off's first
      return 0;
    }
    return k_;
  }

  // After a verification round with `drafted` guesses, `accepted` of them kept; `doubted`: the
  // draft stopped after its last guess, which it doubted (draft_p_min).
  void update(int drafted, int accepted, bool doubted = false) {
    if (fixed_ > 0 || drafted <= 0) return;
    probe_ = false;
    rate_ = rounds_ == 0 ? double(accepted) / drafted : 0.7 * rate_ + 0.3 * double(accepted) / drafted;
    ++rounds_;
    // The guesses tested: the accepted ones, and the first rejected one (those after it were
    // never compared).
    kept_ = kRecency * kept_ + accepted;
    tested_ = kRecency * tested_ + std::min(drafted, accepted + 1);
    // A round the doubt cut short says nothing against k where only the doubted guess could
    // fail: k stays; it grows after a full round of k kept guesses, and drops to one past the
    // accepted prefix where a guess the draft was sure of was rejected.
    const bool cut_by_doubt = doubted && accepted >= drafted - 1;
    if (!cut_by_doubt) k_ = accepted == drafted ? std::min(k_ + 1, kMaxAuto) : std::max(1, accepted + 1);
    if (rounds_ >= 3 && rate_ < kOffBelow) {
      switch_off();
      k_ = 1;
    }
  }

  double acceptance_rate() const { return rate_; }
  // The per-guess acceptance probability the cost rule plans with (a prior of 2 in 3 until
  // guesses are tested).
  double alpha() const { return (kept_ + 2.0 * kPrior) / (tested_ + 3.0 * kPrior); }

  // The k in [0, k_max] with the most tokens per second (0: none beats a plain step by kMinGain).
  static int best_length(double alpha, double fixed, double per_token, double draft_pass, int sequences,
                         int k_max = kMaxAuto) {
    const double n = std::max(1, sequences);
    const double plain = 1.0 / (fixed / n + per_token);
    int best = 0;
    double best_rate = plain * kMinGain, tokens = 1, power = 1;
    for (int k = 1; k <= k_max; ++k) {
      power *= alpha;
      tokens += power;
      const double rate = tokens / ((fixed + draft_pass * k) / n + per_token * (1 + k));
      if (rate > best_rate) best = k, best_rate = rate;
    }
    return best;
  }

 private:
  static constexpr double kRecency = 0.95;   // a tested guess's weight fades over ~20 rounds
  // Guesses a sequence must have had tested before its acceptance is weighed against the costs
  // (its prior alone would switch a new request off where a draft costs half a step).
  static constexpr double kMinTested = 8;
  static constexpr double kPrior = 0.5;

  void switch_off() {
    off_steps_ = backoff_;
    backoff_ = std::min(backoff_ * 2, 256);
    rounds_ = 0;
    probe_ = true;
  }

  int fixed_;
  int k_;
  double rate_ = 0;
  int rounds_ = 0;
  int off_steps_ = 0;
  int backoff_ = 8;
  bool probe_ = false;
  double kept_ = 0, tested_ = 0;
};

}  // namespace llmwb
