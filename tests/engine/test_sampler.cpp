// Sampler: greedy, temperature, top-k, top-p, min-p and repetition penalty select exactly the
// right candidate sets, and draws follow the filtered distribution.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sample/sampler.h"

using namespace llmwb;

namespace {

// Logits whose softmax (at T=1) is proportional to `weights`.
std::vector<float> logits_for(const std::vector<double>& weights) {
  std::vector<float> l;
  for (double w : weights) l.push_back(static_cast<float>(std::log(w)));
  return l;
}

std::vector<float> dist(std::vector<float> logits, const SamplingParams& p, const std::vector<int>& hist = {}) {
  Sampler s;
  std::vector<float> probs;
  s.distribution(logits.data(), static_cast<int>(logits.size()), p, hist, probs);
  return probs;
}

TEST(Sampler, GreedyPicksTheArgmaxAndReportsItsProbability) {
  Sampler s;
  Rng rng(1);
  auto l = logits_for({0.1, 0.6, 0.3});
  SamplingParams p;
  p.temperature = 0;
  SampleResult r = s.sample(l.data(), 3, p, rng, {});
  EXPECT_EQ(r.token, 1);
  EXPECT_NEAR(r.prob, 0.6, 1e-6);
}

TEST(Sampler, TopKKeepsExactlyKMostLikely) {
  SamplingParams p;
  p.top_k = 2;
  auto d = dist(logits_for({0.1, 0.4, 0.2, 0.3}), p);
  EXPECT_FLOAT_EQ(d[0], 0.f);
  EXPECT_FLOAT_EQ(d[2], 0.f);
  EXPECT_NEAR(d[1], 0.4 / 0.7, 1e-6);
  EXPECT_NEAR(d[3], 0.3 / 0.7, 1e-6);
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingTheMass) {
  SamplingParams p;
  p.top_p = 0.65f;   // 0.4 + 0.3 = 0.7 >= 0.65; 0.4 alone is not enough
  auto d = dist(logits_for({0.1, 0.4, 0.2, 0.3}), p);
  EXPECT_FLOAT_EQ(d[0], 0.f);
  EXPECT_FLOAT_EQ(d[2], 0.f);
  EXPECT_NEAR(d[1] + d[3], 1.0, 1e-6);
  p.top_p = 0.35f;   // the single most likely token already reaches it
  d = dist(logits_for({0.1, 0.4, 0.2, 0.3}), p);
  EXPECT_NEAR(d[1], 1.0, 1e-6);
}

TEST(Sampler, MinPDropsTokensBelowAFractionOfTheBest) {
  SamplingParams p;
  p.min_p = 0.6f;   // keep p >= 0.6 * 0.4 = 0.24
  auto d = dist(logits_for({0.1, 0.4, 0.2, 0.3}), p);
  EXPECT_FLOAT_EQ(d[0], 0.f);
  EXPECT_FLOAT_EQ(d[2], 0.f);
  EXPECT_NEAR(d[1], 0.4 / 0.7, 1e-6);
}

TEST(Sampler, TemperatureSharpensAndFlattens) {
  SamplingParams p;
  p.temperature = 0.5f;   // p_i^(1/T) = p_i^2
  auto d = dist(logits_for({0.25, 0.75}), p);
  EXPECT_NEAR(d[1], 0.5625 / (0.5625 + 0.0625), 1e-6);
  p.temperature = 2.0f;   // sqrt
  d = dist(logits_for({0.25, 0.75}), p);
  EXPECT_NEAR(d[1], std::sqrt(0.75) / (std::sqrt(0.75) + 0.5), 1e-6);
}

TEST(Sampler, RepetitionPenaltyDividesPositiveAndMultipliesNegativeLogitsOfSeenTokens) {
  Sampler s;
  Rng rng(0);
  std::vector<float> l{2.0f, 1.9f, -1.0f};
  SamplingParams p;
  p.temperature = 0;
  p.repetition_penalty = 2.0f;
  SampleResult r = s.sample(l.data(), 3, p, rng, {0, 2});
  EXPECT_EQ(r.token, 1);   // 2.0 / 2 = 1.0 < 1.9
  EXPECT_FLOAT_EQ(l[0], 1.0f);
  EXPECT_FLOAT_EQ(l[2], -2.0f);
}

TEST(Sampler, DrawsFollowTheFilteredDistribution) {
  Sampler s;
  Rng rng(12345);
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 3;
  const std::vector<double> w{0.05, 0.35, 0.1, 0.3, 0.2};
  std::vector<int> counts(5, 0);
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    auto l = logits_for(w);
    counts[static_cast<size_t>(s.sample(l.data(), 5, p, rng, {}).token)]++;
  }
  EXPECT_EQ(counts[0], 0);
  EXPECT_EQ(counts[2], 0);
  // Kept: 0.35, 0.3, 0.2 renormalized by 0.85. Chi-square with 2 dof: 13.8 is p = 0.001.
  const double expect[] = {0.35 / 0.85, 0.3 / 0.85, 0.2 / 0.85};
  const int ids[] = {1, 3, 4};
  double chi2 = 0;
  for (int k = 0; k < 3; ++k) {
    const double e = expect[k] * n;
    chi2 += (counts[static_cast<size_t>(ids[k])] - e) * (counts[static_cast<size_t>(ids[k])] - e) / e;
  }
  EXPECT_LT(chi2, 13.8);
}

TEST(Sampler, SameSeedSameDraws) {
  Sampler s;
  Rng a(7), b(7), c(8);
  SamplingParams p;
  std::vector<int> ta, tb, tc;
  for (int i = 0; i < 50; ++i) {
    auto l1 = logits_for({0.2, 0.2, 0.2, 0.2, 0.2}), l2 = l1, l3 = l1;
    ta.push_back(s.sample(l1.data(), 5, p, a, {}).token);
    tb.push_back(s.sample(l2.data(), 5, p, b, {}).token);
    tc.push_back(s.sample(l3.data(), 5, p, c, {}).token);
  }
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
}

TEST(SamplingParams, ValidateNamesTheBadField) {
  SamplingParams p;
  p.temperature = -1;
  try {
    p.validate();
    FAIL();
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("temperature"), std::string::npos);
  }
  p = {};
  p.max_tokens = 0;
  EXPECT_THROW(p.validate(), std::exception);
  p = {};
  p.min_p = 2;
  EXPECT_THROW(p.validate(), std::exception);
}

}  // namespace
