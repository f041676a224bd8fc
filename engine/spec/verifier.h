// verifier.h — the target's side of speculative decoding: given the target's logits at the k+1
// positions a speculating sequence was scored at, decide which guesses stand.
//
// Greedy (temperature 0): the longest prefix of guesses equal to the target's own choice, then
// the target's next token (the bonus, or the correction at the first mismatch): token for token
// what greedy decoding without guesses emits.
// Sampling: speculative sampling (Leviathan et al. 2023, Algorithm 1; Chen et al. 2023): guess
// x, drawn from q, is accepted with probability min(1, p(x) / q(x)); at the first rejection the
// token is drawn from norm(max(0, p - q)); after k acceptances the bonus is drawn from p. p is
// the target's distribution after the plain sampler's stages (penalty, temperature, top-k,
// top-p, min-p: Sampler::distribution), q the proposer's after the same stages (a one-hot for a
// deterministic proposer such as ngram). Every emitted token is then distributed exactly as
// the sampler alone would draw it. Uniforms come from the sequence's own Rng, so a seeded
// request repeats.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "llmwb/sampling_params.h"
#include "sample/rng.h"
#include "sample/sampler.h"

namespace llmwb {

class SpeculativeVerifier {
 public:
  // Appends a token to the sequence (its history, read by the penalty, grows) and returns false
  // once the sequence stops (EOS, a stop string, the length limit): the rest are not emitted.
  using Emit = std::function<bool(int token, float prob, bool from_draft)>;

  explicit SpeculativeVerifier(Sampler& sampler) : sampler_(sampler) {}

  // rows: drafts.size() + 1 rows of `vocab` logits (changed in place); q: drafts.size() rows of
  // probabilities or empty (one-hot). Returns how many guesses were accepted and emitted.
  int verify(float* rows, int vocab, std::span<const int> drafts, std::span<const float> q, const SamplingParams& p,
             Rng& rng, const std::vector<int>& history, const Emit& emit, size_t output_start = 0);

 private:
  Sampler& sampler_;
  std::vector<float> p_, residual_;
};

}  // namespace llmwb
