#include "sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace llmwb {

void Sampler::apply_penalty(float* logits, int vocab, float penalty, const std::vector<int>& history) {
  if (penalty == 1.0f) return;
  seen_.assign(static_cast<size_t>(vocab), 0);
  for (int t : history)
    if (t >= 0 && t < vocab) seen_[static_cast<size_t>(t)] = 1;
  for (int i = 0; i < vocab; ++i)
    if (seen_[static_cast<size_t>(i)]) logits[i] = logits[i] > 0 ? logits[i] / penalty : logits[i] * penalty;
}

void Sampler::distribution(float* logits, int vocab, const SamplingParams& p, const std::vector<int>& history,
                           std::vector<float>& probs) {
  apply_penalty(logits, vocab, p.repetition_penalty, history);
  filter(logits, vocab, p, probs);
}

void Sampler::filter(const float* logits, int vocab, const SamplingParams& p, std::vector<float>& probs) {
  probs.assign(static_cast<size_t>(vocab), 0.f);
  if (p.temperature <= 0.f) {
    probs[static_cast<size_t>(std::max_element(logits, logits + vocab) - logits)] = 1.f;
    return;
  }
  // Softmax at temperature, in double for a stable normalization.
  const float mx = *std::max_element(logits, logits + vocab);
  double sum = 0;
  std::vector<double>& e = e_;
  e.resize(static_cast<size_t>(vocab));
  for (int i = 0; i < vocab; ++i) sum += e[static_cast<size_t>(i)] = std::exp((logits[i] - mx) / p.temperature);
  e_sum_ = sum;
  // Candidates sorted by probability, descending (ties by id for determinism).
  idx_.resize(static_cast<size_t>(vocab));
  std::iota(idx_.begin(), idx_.end(), 0);
  size_t keep = static_cast<size_t>(vocab);
  if (p.top_k > 0 && p.top_k < vocab) keep = static_cast<size_t>(p.top_k);
  std::partial_sort(idx_.begin(), idx_.begin() + static_cast<std::ptrdiff_t>(keep), idx_.end(), by_prob());
  kept_after_[0] = keep;
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
  kept_after_[1] = keep;
  if (p.min_p > 0.f) {
    const double pmax = e[static_cast<size_t>(idx_[0])];
    size_t k = 1;
    while (k < keep && e[static_cast<size_t>(idx_[k])] >= p.min_p * pmax) ++k;
    keep = k;
  }
  kept_after_[2] = keep;
  double kept = 0;
  for (size_t i = 0; i < keep; ++i) kept += e[static_cast<size_t>(idx_[i])];
  for (size_t i = 0; i < keep; ++i)
    probs[static_cast<size_t>(idx_[i])] = static_cast<float>(e[static_cast<size_t>(idx_[i])] / kept);
}

SampleResult Sampler::draw(Rng& rng, double* u, double* cdf_before) {
  // Inverse CDF over the kept candidates in descending-probability order (idx_ holds them).
  const double r = rng.uniform();
  if (u) *u = r;
  double cum = 0;
  int last = idx_[0];
  for (int i : idx_) {
    const float pi = probs_[static_cast<size_t>(i)];
    if (pi <= 0.f) break;
    if (cdf_before) *cdf_before = cum;
    cum += pi;
    last = i;
    if (r < cum) return {i, pi};
  }
  return {last, probs_[static_cast<size_t>(last)]};
}

SampleResult Sampler::sample(float* logits, int vocab, const SamplingParams& p, Rng& rng,
                             const std::vector<int>& history) {
  if (p.temperature <= 0.f) {
    apply_penalty(logits, vocab, p.repetition_penalty, history);
    const int best = static_cast<int>(std::max_element(logits, logits + vocab) - logits);
    // Report the token's probability under the plain softmax (temperature 1) for the UI.
    double sum = 0;
    for (int i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - logits[best]);
    return {best, static_cast<float>(1.0 / sum)};
  }
  distribution(logits, vocab, p, history, probs_);
  return draw(rng, nullptr, nullptr);
}

namespace {

// Softmax of `logits` (double), for the trace's temperature-1 and penalized columns.
std::vector<double> softmax(const float* logits, int vocab, double temperature) {
  const float mx = *std::max_element(logits, logits + vocab);
  std::vector<double> p(static_cast<size_t>(vocab));
  double sum = 0;
  for (int i = 0; i < vocab; ++i) sum += p[size_t(i)] = std::exp((double(logits[i]) - mx) / temperature);
  for (double& x : p) x /= sum;
  return p;
}

}  // namespace

SampleResult Sampler::trace(const float* logits_in, int vocab, const SamplingParams& p, Rng& rng,
                            const std::vector<int>& history, int top, SamplerTrace& out) {
  std::vector<float> logits(logits_in, logits_in + vocab);
  out = SamplerTrace{};
  out.greedy = p.temperature <= 0.f;
  std::vector<float> raw = logits;
  if (p.repetition_penalty != 1.0f) out.stages.push_back("repetition_penalty");
  SampleResult r;
  std::vector<int> order;   // token ids, most likely first, as the sampler orders them
  const int n_top = std::max(1, std::min(top, vocab));
  if (out.greedy) {
    // The same path as sample(): penalty, then the first maximum.
    r = sample(logits.data(), vocab, p, rng, history);
    out.stages.push_back("argmax");
    order.resize(static_cast<size_t>(vocab));
    std::iota(order.begin(), order.end(), 0);
    const float* l = logits.data();
    std::partial_sort(order.begin(), order.begin() + n_top, order.end(),
                      [&](int a, int b) { return l[a] != l[b] ? l[a] > l[b] : a < b; });
    out.kept = 1;
    out.chosen_prob = 1.0;
  } else {
    out.stages.push_back("temperature");
    if (p.top_k > 0 && p.top_k < vocab) out.stages.push_back("top_k");
    if (p.top_p < 1.0f) out.stages.push_back("top_p");
    if (p.min_p > 0.f) out.stages.push_back("min_p");
    apply_penalty(logits.data(), vocab, p.repetition_penalty, history);
    filter(logits.data(), vocab, p, probs_);
    r = draw(rng, &out.draw, &out.draw_cdf_before);
    out.kept = static_cast<int>(kept_after_[2]);
    out.chosen_prob = r.prob;
    // idx_ is sorted past the first kept_after_[0] only partially: sort the listed ones fully,
    // by the comparator the filters used.
    order = idx_;
    std::partial_sort(order.begin(), order.begin() + n_top, order.end(), by_prob());
  }
  out.chosen = r.token;
  const std::vector<double> p_raw = softmax(raw.data(), vocab, 1.0);
  const std::vector<double> p_temp = softmax(logits.data(), vocab, out.greedy ? 1.0 : double(p.temperature));
  for (int k = 0; k < n_top; ++k) {
    const int t = order[static_cast<size_t>(k)];
    SamplerCandidate c;
    c.token = t;
    c.rank = k;
    c.logit = raw[size_t(t)];
    c.logit_penalized = logits[size_t(t)];
    c.penalized = c.logit != c.logit_penalized;
    c.prob_raw = p_raw[size_t(t)];
    c.prob_temperature = p_temp[size_t(t)];
    if (out.greedy) {
      c.prob_final = t == r.token ? 1.0 : 0.0;
    } else {
      c.prob_final = probs_[size_t(t)];
      const size_t pos = static_cast<size_t>(k);
      if (pos >= kept_after_[0]) c.removed_by = SamplerStage::TopK;
      else if (pos >= kept_after_[1]) c.removed_by = SamplerStage::TopP;
      else if (pos >= kept_after_[2]) c.removed_by = SamplerStage::MinP;
    }
    out.candidates.push_back(c);
  }
  // The chosen token's rank, listed or not.
  if (out.greedy) {
    out.chosen_rank = 0;
  } else {
    const double ec = e_[size_t(r.token)];
    int rank = 0;
    for (int i = 0; i < vocab; ++i)
      if (e_[size_t(i)] > ec || (e_[size_t(i)] == ec && i < r.token)) ++rank;
    out.chosen_rank = rank;
  }
  return r;
}

}  // namespace llmwb
