// The benchmark statistics (llmwb/stats.h): median of odd and even counts in any order, the
// sample standard deviation, and empty or single inputs giving 0 instead of reading past the
// end.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "llmwb/stats.h"

namespace {

TEST(Stats, MedianOfOddAndEvenCountsInAnyOrder) {
  EXPECT_EQ(llmwb::median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_EQ(llmwb::median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_EQ(llmwb::median({7.5}), 7.5);
  EXPECT_EQ(llmwb::median({}), 0.0);
}

TEST(Stats, SampleStandardDeviation) {
  EXPECT_NEAR(llmwb::stddev({2, 4, 4, 4, 5, 5, 7, 9}), std::sqrt(32.0 / 7.0), 1e-12);
  EXPECT_EQ(llmwb::stddev({5.0}), 0.0);
  EXPECT_EQ(llmwb::stddev({}), 0.0);
}

}  // namespace
