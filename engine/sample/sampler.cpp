#include "sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace llmwb {

void Sampler::apply_penalties(float* logits, int vocab, const SamplingParams& p, const std::vector<int>& history,
                              size_t output_start) {
  const float penalty = p.repetition_penalty;
  if (penalty != 1.0f) {
    seen_.assign(static_cast<size_t>(vocab), 0);
    for (int t : history)
      if (t >= 0 && t < vocab) seen_[static_cast<size_t>(t)] = 1;
    for (int i = 0; i < vocab; ++i)
      if (seen_[static_cast<size_t>(i)]) logits[i] = logits[i] > 0 ? logits[i] / penalty : logits[i] * penalty;
  }
  if (p.presence_penalty == 0.f && p.frequency_penalty == 0.f) return;
  // OpenAI's definition: logit -= count * frequency_penalty + (count > 0) * presence_penalty,
  // count over the generated tokens only.
  counts_.assign(static_cast<size_t>(vocab), 0);
  for (size_t i = std::min(output_start, history.size()); i < history.size(); ++i)
    if (history[i] >= 0 && history[i] < vocab) ++counts_[static_cast<size_t>(history[i])];
  for (int i = 0; i < vocab; ++i)
    if (const int c = counts_[static_cast<size_t>(i)])
      logits[i] -= static_cast<float>(c) * p.frequency_penalty + p.presence_penalty;
}

float Sampler::logprobs(const float* logits, int vocab, int token, int top, std::vector<TokenLogprob>& top_out) {
  const float mx = *std::max_element(logits, logits + vocab);
  double sum = 0;
  for (int i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
  const double log_z = mx + std::log(sum);
  top_out.clear();
  const size_t k = static_cast<size_t>(std::clamp(top, 0, vocab));
  if (k > 0) {
    idx_.resize(static_cast<size_t>(vocab));
    std::iota(idx_.begin(), idx_.end(), 0);
    std::partial_sort(idx_.begin(), idx_.begin() + static_cast<std::ptrdiff_t>(k), idx_.end(),
                      [&](int a, int b) { return logits[a] != logits[b] ? logits[a] > logits[b] : a < b; });
    for (size_t i = 0; i < k; ++i)
      top_out.push_back({idx_[i], static_cast<float>(logits[idx_[i]] - log_z)});
  }
  return static_cast<float>(logits[token] - log_z);
}

void Sampler::distribution(float* logits, int vocab, const SamplingParams& p, const std::vector<int>& history,
                           std::vector<float>& probs, size_t output_start) {
  apply_penalties(logits, vocab, p, history, output_start);
  probs.assign(static_cast<size_t>(vocab), 0.f);
  if (p.temperature <= 0.f) {
    probs[static_cast<size_t>(std::max_element(logits, logits + vocab) - logits)] = 1.f;
    return;
  }
  // Softmax at temperature, in double for a stable normalization.
  const float mx = *std::max_element(logits, logits + vocab);
  double sum = 0;
  std::vector<double> e(static_cast<size_t>(vocab));
  for (int i = 0; i < vocab; ++i) sum += e[static_cast<size_t>(i)] = std::exp((logits[i] - mx) / p.temperature);
  // Candidates sorted by probability, descending (ties by id for determinism).
  idx_.resize(static_cast<size_t>(vocab));
  std::iota(idx_.begin(), idx_.end(), 0);
  auto by_prob = [&](int a, int b) { return e[size_t(a)] != e[size_t(b)] ? e[size_t(a)] > e[size_t(b)] : a < b; };
  size_t keep = static_cast<size_t>(vocab);
  if (p.top_k > 0 && p.top_k < vocab) keep = static_cast<size_t>(p.top_k);
  std::partial_sort(idx_.begin(), idx_.begin() + static_cast<std::ptrdiff_t>(keep), idx_.end(), by_prob);
  if (p.top_p < 1.0f) {
    // Smallest prefix whose mass reaches top_p (of the whole distribution).
    double cum = 0;
    size_t k = 0;
    while (k < keep) {
      cum += e[static_cast<size_t>(idx_[k])] / sum;
      ++k;
      if (cum >= p.top_p) break;
    }
    keep = std::max<size_t>(k, 1);
  }
  if (p.min_p > 0.f) {
    const double pmax = e[static_cast<size_t>(idx_[0])];
    size_t k = 1;
    while (k < keep && e[static_cast<size_t>(idx_[k])] >= p.min_p * pmax) ++k;
    keep = k;
  }
  double kept = 0;
  for (size_t i = 0; i < keep; ++i) kept += e[static_cast<size_t>(idx_[i])];
  for (size_t i = 0; i < keep; ++i)
    probs[static_cast<size_t>(idx_[i])] = static_cast<float>(e[static_cast<size_t>(idx_[i])] / kept);
}

SampleResult Sampler::sample(float* logits, int vocab, const SamplingParams& p, Rng& rng,
                             const std::vector<int>& history, size_t output_start) {
  if (p.temperature <= 0.f) {
    apply_penalties(logits, vocab, p, history, output_start);
    const int best = static_cast<int>(std::max_element(logits, logits + vocab) - logits);
    // Report the token's probability under the plain softmax (temperature 1) for the UI.
    double sum = 0;
    for (int i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - logits[best]);
    return {best, static_cast<float>(1.0 / sum)};
  }
  distribution(logits, vocab, p, history, probs_, output_start);
  // Inverse CDF over the kept candidates in descending-probability order (idx_ holds them).
  const double r = rng.uniform();
  double cum = 0;
  int last = idx_[0];
  for (int i : idx_) {
    const float pi = probs_[static_cast<size_t>(i)];
    if (pi <= 0.f) break;
    cum += pi;
    last = i;
    if (r < cum) return {i, pi};
  }
  return {last, probs_[static_cast<size_t>(last)]};
}

}  // namespace llmwb
