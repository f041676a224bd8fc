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

 private:
  void apply_penalty(float* logits, int vocab, float penalty, const std::vector<int>& history);
  std::vector<int> idx_;
  std::vector<float> probs_;
  std::vector<uint8_t> seen_;
};

}  // namespace llmwb
