// test_ops.cpp — the CPU vector ops of the forward pass against direct double-precision math.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/ops.h"
#include "support/simd_levels.h"

namespace llmwb {
namespace {

std::vector<float> random_vector(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& f : v) f = u(rng);
  return v;
}

const int64_t kSizes[] = {1, 3, 15, 16, 17, 64, 100, 288, 1001};

TEST(Ops, RmsnormScalesByTheInverseRootMeanSquare) {
  for (int64_t n : kSizes) {
    const auto x = random_vector(static_cast<size_t>(n), 1);
    const auto w = random_vector(static_cast<size_t>(n), 2);
    std::vector<float> out(x.size());
    cpu::rmsnorm(out.data(), x.data(), w.data(), n, 1e-5f);
    double ss = 0;
    for (float v : x) ss += double(v) * v;
    const double inv = 1.0 / std::sqrt(ss / n + 1e-5);
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(out[i], x[i] * inv * w[i], 1e-5 * std::fabs(x[i] * inv) + 1e-7);
    // In place gives the same result.
    std::vector<float> inplace = x;
    cpu::rmsnorm(inplace.data(), inplace.data(), w.data(), n, 1e-5f);
    EXPECT_EQ(inplace, out);
  }
}

TEST(Ops, SiluMulGatesTheUpProjection) {
  for (cpu::SimdLevel level : test::available_levels()) {
    test::SimdLevelGuard guard(level);
    for (int64_t n : kSizes) {
      auto g = random_vector(static_cast<size_t>(n), 3, 8.0f);
      const auto u = random_vector(static_cast<size_t>(n), 4);
      const auto g0 = g;
      cpu::silu_mul(g.data(), u.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const double expect = g0[i] / (1.0 + std::exp(-double(g0[i]))) * u[i];
        EXPECT_NEAR(g[i], expect, 1e-6 * (1 + std::fabs(expect))) << cpu::simd_level_name(level) << " n=" << n;
      }
    }
  }
}

// Large gates: silu(g) -> g for large g, -> 0 (not NaN) for very negative g, at every level.
TEST(Ops, SiluMulHandlesLargeGates) {
  const std::vector<float> g0 = {0.0f, -0.0f, 30.0f, -30.0f, 88.0f, -88.0f, 104.0f, -104.0f, 1e30f, -1e30f, 3e38f,
                                 -3e38f, 1e-30f, -1e-30f, 0.5f, -0.5f, 20.0f};
  const std::vector<float> u(g0.size(), 0.5f);
  for (cpu::SimdLevel level : test::available_levels()) {
    test::SimdLevelGuard guard(level);
    std::vector<float> g = g0;
    cpu::silu_mul(g.data(), u.data(), static_cast<int64_t>(g.size()));
    for (size_t i = 0; i < g.size(); ++i) {
      const double x = g0[i];
      const double expect = (x >= 0 ? x / (1.0 + std::exp(-x)) : x * std::exp(x) / (1.0 + std::exp(x))) * 0.5;
      ASSERT_TRUE(std::isfinite(g[i])) << cpu::simd_level_name(level) << " g=" << g0[i];
      EXPECT_NEAR(g[i], expect, 1e-6 * std::fabs(expect) + 1e-30) << cpu::simd_level_name(level) << " g=" << g0[i];
    }
  }
}

// An element's result must not depend on how many elements the call has or where it sits
// (the partial last vector included), or a token's activations would depend on its batch.
TEST(Ops, SiluMulOfAnElementDoesNotDependOnItsPositionOrTheLength) {
  const auto g = random_vector(100, 6, 10.0f);
  const auto u = random_vector(100, 7);
  for (cpu::SimdLevel level : test::available_levels()) {
    test::SimdLevelGuard guard(level);
    std::vector<float> whole = g;
    cpu::silu_mul(whole.data(), u.data(), 100);
    for (int64_t first : {0, 1, 5, 17, 40}) {
      for (int64_t n : {1, 3, 15, 16, 17, 33, 60}) {
        std::vector<float> part(g.begin() + first, g.begin() + first + n);
        cpu::silu_mul(part.data(), u.data() + first, n);
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(std::memcmp(&part[i], &whole[first + i], sizeof(float)), 0)
              << cpu::simd_level_name(level) << " element " << first + i << " in a call of " << n << " from " << first;
        }
      }
    }
  }
}

TEST(Ops, SoftmaxSumsToOneAndSurvivesLargeLogits) {
  for (int64_t n : kSizes) {
    auto x = random_vector(static_cast<size_t>(n), 5, 30.0f);
    x[0] = 1000.0f;   // exp(1000) overflows float: the max must be subtracted first
    const auto x0 = x;
    cpu::softmax_inplace(x.data(), n);
    double z = 0;
    for (float v : x0) z += std::exp(double(v) - 1000.0);
    double total = 0;
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_TRUE(std::isfinite(x[i]));
      EXPECT_NEAR(x[i], std::exp(double(x0[i]) - 1000.0) / z, 1e-6);
      total += x[i];
    }
    EXPECT_NEAR(total, 1.0, 1e-5);
  }
}

TEST(Ops, DotAxpyAndAddMatchDirectSums) {
  for (int64_t n : kSizes) {
    const auto a = random_vector(static_cast<size_t>(n), 6);
    const auto b = random_vector(static_cast<size_t>(n), 7);
    double d = 0, abs = 0;
    for (int64_t i = 0; i < n; ++i) {
      d += double(a[i]) * b[i];
      abs += std::fabs(double(a[i]) * b[i]);
    }
    EXPECT_NEAR(cpu::dot_f32(a.data(), b.data(), n), d, (n + 2) * 1.2e-7 * abs + 1e-12);

    std::vector<float> y = b;
    cpu::axpy(y.data(), 0.5f, a.data(), n);
    for (int64_t i = 0; i < n; ++i) EXPECT_FLOAT_EQ(y[i], b[i] + 0.5f * a[i]);

    y = b;
    cpu::add_inplace(y.data(), a.data(), n);
    for (int64_t i = 0; i < n; ++i) EXPECT_FLOAT_EQ(y[i], b[i] + a[i]);
  }
}

}  // namespace
}  // namespace llmwb
