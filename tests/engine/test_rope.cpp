// RoPE frequencies: plain, linear position interpolation, Llama 3.1 scaling and GGUF
// rope_freqs divisors, each against its published formula.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/backend.h"

using namespace llmwb;

namespace {

ModelConfig base(int head_dim, float theta) {
  ModelConfig c;
  c.head_dim = head_dim;
  c.rope_theta = theta;
  return c;
}

TEST(Rope, PlainFrequenciesAreThetaToTheMinusTwoIOverD) {
  RopeParams rp = RopeParams::from(base(64, 10000.f));
  ASSERT_EQ(rp.inv_freq.size(), 32u);
  for (int i = 0; i < 32; ++i) EXPECT_NEAR(rp.inv_freq[size_t(i)], std::pow(10000.0, -2.0 * i / 64), 1e-15);
}

TEST(Rope, LinearScalingDividesEveryFrequency) {
  ModelConfig c = base(64, 10000.f);
  c.rope_scaling.type = "linear";
  c.rope_scaling.factor = 4.f;
  RopeParams rp = RopeParams::from(c);
  for (int i = 0; i < 32; ++i) EXPECT_NEAR(rp.inv_freq[size_t(i)], std::pow(10000.0, -2.0 * i / 64) / 4, 1e-15);
}

TEST(Rope, Llama3ScalingKeepsHighFrequenciesScalesLowOnesAndBlendsBetween) {
  ModelConfig c = base(128, 500000.f);
  c.rope_scaling.type = "llama3";
  c.rope_scaling.factor = 8.f;
  c.rope_scaling.low_freq_factor = 1.f;
  c.rope_scaling.high_freq_factor = 4.f;
  c.rope_scaling.original_max_position = 8192;
  RopeParams rp = RopeParams::from(c);
  int kept = 0, scaled = 0, blended = 0;
  for (int i = 0; i < 64; ++i) {
    const double f = std::pow(500000.0, -2.0 * i / 128), wavelen = 2 * M_PI / f;
    double want;
    if (wavelen < 8192.0 / 4) {
      want = f, ++kept;
    } else if (wavelen > 8192.0 / 1) {
      want = f / 8, ++scaled;
    } else {
      const double s = (8192.0 / wavelen - 1) / (4 - 1);
      want = (1 - s) * f / 8 + s * f, ++blended;
    }
    EXPECT_NEAR(rp.inv_freq[size_t(i)], want, 1e-12 * f) << "pair " << i;
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(scaled, 0);
  EXPECT_GT(blended, 0);
}

TEST(Rope, GgufFrequencyFactorsDivideEachPair) {
  ModelConfig c = base(8, 10000.f);
  c.rope_freq_factors = {1.f, 2.f, 4.f, 8.f};
  RopeParams rp = RopeParams::from(c);
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(rp.inv_freq[size_t(i)], std::pow(10000.0, -2.0 * i / 8) / c.rope_freq_factors[size_t(i)], 1e-15);
}

}  // namespace
