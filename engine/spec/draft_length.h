// draft_length.h — how many tokens a sequence drafts next step. Fixed k, or adaptive (as
// llama.cpp's p-min and vLLM's dynamic speculation do, in their spirit): k grows by one after a
// round where every guess was accepted and drops to one past the accepted prefix after a
// rejection, between 1 and kMaxAuto; where the running acceptance rate falls below kOffBelow
// the sequence stops speculating for a while (the pass over k+1 positions costs more than the
// tokens it yields), retrying with k = 1 after a back-off that doubles each time.
#pragma once

#include <algorithm>

namespace llmwb {

class DraftLength {
 public:
  static constexpr int kMaxAuto = 8;
  static constexpr double kOffBelow = 0.2;

  explicit DraftLength(int fixed_k = 0) : fixed_(fixed_k), k_(fixed_k > 0 ? fixed_k : 3) {}

  // Draft slots to ask for this step (0: not speculating now). Counts down a back-off.
  int next() {
    if (fixed_ > 0) return fixed_;
    if (off_steps_ > 0) {
      --off_steps_;
      return 0;
    }
    return k_;
  }
  // After a verification round with `drafted` guesses, `accepted` of them kept.
  void update(int drafted, int accepted) {
    if (fixed_ > 0 || drafted <= 0) return;
    rate_ = rounds_ == 0 ? double(accepted) / drafted : 0.7 * rate_ + 0.3 * double(accepted) / drafted;
    ++rounds_;
    k_ = accepted == drafted ? std::min(k_ + 1, kMaxAuto) : std::max(1, accepted + 1);
    if (rounds_ >= 3 && rate_ < kOffBelow) {
      off_steps_ = backoff_;
      backoff_ = std::min(backoff_ * 2, 256);
      k_ = 1;
      rounds_ = 0;
    }
  }
  double acceptance_rate() const { return rate_; }

 private:
  int fixed_;
  int k_;
  double rate_ = 0;
  int rounds_ = 0;
  int off_steps_ = 0;
  int backoff_ = 8;
};

}  // namespace llmwb
