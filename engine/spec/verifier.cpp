#include "spec/verifier.h"

#include <algorithm>

namespace llmwb {

namespace {

// Inverse CDF over unnormalized weights w (sum `total`) with uniform u.
int draw(const std::vector<float>& w, double total, double u) {
  const double r = u * total;
  double cum = 0;
  int last = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    if (w[i] <= 0.f) continue;
    cum += w[i];
    last = static_cast<int>(i);
    if (r < cum) return last;
  }
  return last;
}

}  // namespace

int SpeculativeVerifier::verify(float* rows, int vocab, std::span<const int> drafts, std::span<const float> q,
                                const SamplingParams& p, Rng& rng, const std::vector<int>& history, const Emit& emit,
                                size_t output_start) {
  const int k = static_cast<int>(drafts.size());
  int accepted = 0;
  for (int i = 0; i <= k; ++i) {
    float* row = rows + static_cast<size_t>(i) * vocab;
    if (i == k || p.temperature <= 0.f) {
      // The bonus token, or greedy: the sampler's own choice.
      const SampleResult r = sampler_.sample(row, vocab, p, rng, history, output_start);
      if (i < k && r.token == drafts[static_cast<size_t>(i)]) {
        ++accepted;
        if (!emit(r.token, r.prob, true)) return accepted;
        continue;
      }
      emit(r.token, r.prob, false);
      return accepted;
    }
    const int x = drafts[static_cast<size_t>(i)];
    sampler_.distribution(row, vocab, p, history, p_, output_start);
    const float px = p_[static_cast<size_t>(x)];
    const float* qi = q.empty() ? nullptr : q.data() + static_cast<size_t>(i) * vocab;
    const double qx = qi ? qi[x] : 1.0;
    // Accept with probability min(1, p(x) / q(x)): u < p/q, written without the division.
    if (qx > 0 && rng.uniform() * qx < px) {
      ++accepted;
      if (!emit(x, px, true)) return accepted;
      continue;
    }
    residual_.assign(static_cast<size_t>(vocab), 0.f);
    double total = 0;
    for (int t = 0; t < vocab; ++t) {
      const float qt = qi ? qi[t] : (t == x ? 1.f : 0.f);
      const float d = std::max(0.f, p_[static_cast<size_t>(t)] - qt);
      residual_[static_cast<size_t>(t)] = d;
      total += d;
    }
    if (total <= 0) {   // p == q up to rounding: rejection cannot happen in exact arithmetic
      residual_ = p_;
      total = 1;
    }
    const int t = draw(residual_, total, rng.uniform());
    emit(t, p_[static_cast<size_t>(t)], false);
    return accepted;
  }
  return accepted;
}

}  // namespace llmwb
