// sampler.h — picks the next token from a row of logits.
//
// Order (as Hugging Face and vLLM apply them): repetition penalty on the raw logits (CTRL,
// Keskar et al. 2019: a seen token's positive logit is divided by the penalty, a negative one
// multiplied); then greedy argmax when temperature == 0; otherwise logits / temperature ->
// softmax -> top-k -> top-p (nucleus, Holtzman et al. 2020) -> min-p (relative to the most
// likely token) -> renormalize -> draw with the request's own seeded Rng.
#pragma once

#include <vector>

#include "llmwb/sampling_params.h"
#include "llmwb/step_inspection.h"
#include "sample/rng.h"

namespace llmwb {

struct SampleResult {
  int token = 0;
  float prob = 0.f;   // probability of the chosen token under the final (filtered) distribution
};

class Sampler {
 public:
  // `logits` is modified in place (penalties). `history` = prompt + generated ids, for the
  // repetition penalty. `scratch` avoids allocation per call.
  SampleResult sample(float* logits, int vocab, const SamplingParams& p, Rng& rng,
                      const std::vector<int>& history);

  // The filtered, renormalized distribution (for tests and the UI): probs over the vocab.
  void distribution(float* logits, int vocab, const SamplingParams& p, const std::vector<int>& history,
                    std::vector<float>& probs);

  // sample(), recording what each stage did (the token inspector): the same decision and the
  // same draws from `rng` as sample() makes for these logits (not modified here), and the
  // `top` most likely candidates with their logits and probabilities through the stages.
  SampleResult trace(const float* logits, int vocab, const SamplingParams& p, Rng& rng,
                     const std::vector<int>& history, int top, SamplerTrace& out);

 private:
  // Temperature softmax, top-k, top-p, min-p over (penalized) logits: probs over the vocab,
  // idx_ the candidates most likely first (sorted as far as kept by top-k), kept_after_ how
  // many each filter left.
  void filter(const float* logits, int vocab, const SamplingParams& p, std::vector<float>& probs);
  // The inverse-CDF draw over filter()'s probs_ in idx_ order: its uniform and the mass before
  // the chosen candidate when asked.
  SampleResult draw(Rng& rng, double* u, double* cdf_before);
  auto by_prob() const {
    return [this](int a, int b) { return e_[size_t(a)] != e_[size_t(b)] ? e_[size_t(a)] > e_[size_t(b)] : a < b; };
  }
  void apply_penalty(float* logits, int vocab, float penalty, const std::vector<int>& history);
  std::vector<int> idx_;
  std::vector<float> probs_;
  std::vector<uint8_t> seen_;
  std::vector<double> e_;   // exp((logit - max) / temperature)
  double e_sum_ = 0;
  size_t kept_after_[3] = {0, 0, 0};   // after top-k, top-p, min-p
};

}  // namespace llmwb
