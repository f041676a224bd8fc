// spec_cost.h — what speculation costs on this engine, learnt from its own steps, so that an
// adaptive draft length can weigh the tokens a round is expected to yield against its time.
//
// Decode steps (every scheduled sequence decoding: its one new token plus its guesses) give
// the target's forward pass as a + b * tokens: a the fixed cost of a step (the weights streamed
// once), b each further token's (its share of the flops); a least-squares line over the recent
// steps' token counts, each weighted by recency, its slope shrunk toward 0 (per_token). A step
// whose draft ran `passes` forward passes (Proposer::last_passes) gives the draft's cost per
// pass, c. A plain decode
// step of n sequences then costs a + b n; a round where each drafts k, a + b n (1 + k) + c k.
#pragma once

#include <algorithm>

namespace llmwb {

class SpecCost {
 public:
  // Weight of the newest step against the ones before (a step's figures fade over ~10 steps:
  // the machine's memory and the batch move, the line follows them).
  static constexpr double kDecay = 0.9;
  // Steps the line needs before it is used, and the spread of token counts it needs to tell a
  // from b (steps that all had the same count say nothing about b).
  static constexpr double kMinSteps = 4;
  static constexpr double kMinTokenSpread = 0.1;
  static constexpr double kRidge = 1.0;

  // A decode step: `tokens` target tokens in `forward_seconds`; the draft ran `draft_passes`
  // passes in `draft_seconds` (0 passes: no draft this step).
  void add_step(int tokens, double forward_seconds, int draft_passes, double draft_seconds) {
    if (tokens <= 0 || !(forward_seconds > 0)) return;
    const double n = tokens, t = forward_seconds;
    w_ = kDecay * w_ + 1;
    sn_ = kDecay * sn_ + n;
    snn_ = kDecay * snn_ + n * n;
    st_ = kDecay * st_ + t;
    snt_ = kDecay * snt_ + n * t;
    if (draft_passes > 0 && draft_seconds >= 0) {
      dp_ = kDecay * dp_ + draft_passes;
      ds_ = kDecay * ds_ + draft_seconds;
    }
    ++steps_;
  }

  // Whether the line and the draft's cost are known well enough to plan with.
  bool ready() const {
    if (steps_ < kMinSteps || dp_ <= 0) return false;   // dp_: a draft has run (its seconds may be ~0: ngram)
    const double mean = sn_ / w_;
    return snn_ / w_ - mean * mean >= kMinTokenSpread;
  }

  // The fixed and per-token cost of the target's pass (seconds); b is never below zero (a
  // noisy line may tilt down: a further token never makes a pass cheaper).
  double fixed() const {
    const double mean_n = sn_ / w_, mean_t = st_ / w_;
    return std::max(0.0, mean_t - per_token() * mean_n);
  }
  // The slope is shrunk toward 0 (ridge, kRidge tokens^2 added to the counts' variance): the
  // line is fitted where speculating steps are, a few tokens apart, and on a machine whose
  // memory rate moves within seconds its slope alone swung 1-16 ms a token between runs (AMD
  // EPYC Zen 4), which, extrapolated back to one token, could put a plain step below a
  // speculating round that pays. Shrunk, the line still meets the steps at their mean.
  double per_token() const {
    const double mean_n = sn_ / w_, mean_t = st_ / w_;
    const double var = snn_ / w_ - mean_n * mean_n;
    if (var <= 0) return 0;
    return std::max(0.0, (snt_ / w_ - mean_n * mean_t) / (var + kRidge));
  }
  // One draft pass (seconds).
  double draft_pass() const { return dp_ > 0 ? ds_ / dp_ : 0; }

 private:
  double w_ = 0, sn_ = 0, snn_ = 0, st_ = 0, snt_ = 0;   // recency-weighted sums of 1, n, n^2, t, n t
  double dp_ = 0, ds_ = 0;                               // of draft passes and their seconds
  int steps_ = 0;
};

}  // namespace llmwb
