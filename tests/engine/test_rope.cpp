// RoPE frequencies: plain, linear position interpolation, Llama 3.1 scaling and GGUF
// rope_freqs divisors, each against its published formula.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"

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


// CpuBackend::rope against the rotation written out (cos / sin of the double angle, rounded to
// float, the pair rotated in float), bitwise: rows at positions in any order and repeated, a
// later call past every position seen (the backend's table grows), other frequencies (the
// table is rebuilt), both layouts, and enough rows to be split over the threads.
TEST(Rope, BackendRotatesEveryRowAsTheFormulaOnAnyPositionsAndFrequencies) {
  CpuBackend be(2);
  for (float theta : {10000.f, 500000.f, 10000.f}) {
    for (RopeLayout layout : {RopeLayout::Interleaved, RopeLayout::RotateHalf}) {
      ModelConfig c = base(64, theta);
      c.rope_layout = layout;
      const RopeParams rp = RopeParams::from(c);
      for (const std::vector<int>& positions :
           {std::vector<int>{5, 0, 5, 3}, std::vector<int>{900, 17, 2, 899}, std::vector<int>(300, 0)}) {
        std::vector<int> pos = positions;
        if (pos.size() == 300)
          for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int>((i * 37) % 1200);
        const int n_rows = static_cast<int>(pos.size()), n_heads = 3, hd = 64, half = 32;
        std::vector<float> x(static_cast<size_t>(n_rows) * n_heads * hd);
        for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i)) * 3.f;
        std::vector<float> want = x;
        for (int r = 0; r < n_rows; ++r) {
          for (int h = 0; h < n_heads; ++h) {
            float* v = want.data() + (size_t(r) * n_heads + h) * hd;
            for (int i = 0; i < half; ++i) {
              const double a = pos[size_t(r)] * rp.inv_freq[size_t(i)];
              const float cs = static_cast<float>(std::cos(a)), sn = static_cast<float>(std::sin(a));
              float& x0 = layout == RopeLayout::Interleaved ? v[2 * i] : v[i];
              float& x1 = layout == RopeLayout::Interleaved ? v[2 * i + 1] : v[i + half];
              const float a0 = x0, a1 = x1;
              x0 = a0 * cs - a1 * sn;
              x1 = a0 * sn + a1 * cs;
            }
          }
        }
        be.rope(x.data(), n_rows, n_heads, pos.data(), rp);
        EXPECT_EQ(x, want) << "theta " << theta << " rows " << n_rows;
      }
    }
  }
}

}  // namespace
