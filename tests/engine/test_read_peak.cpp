// test_read_peak.cpp — the roofline's read loops (backend/cpu/read_peak.h): every pattern at
// every SIMD level reads every float of its range exactly once and sums it exactly.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>

#include "backend/cpu/read_peak.h"
#include "memory/page_buffer.h"
#include "support/simd_levels.h"

namespace llmwb {
namespace {

// Small integers that differ along the buffer, so a float read twice, skipped or read from the
// wrong stream changes the sum; the exact sum in double.
double fill(float* x, int64_t n) {
  double want = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>((i * 7 + i / 1000) % 13);
    want += x[i];
  }
  return want;
}

TEST(ReadPeak, EveryPatternAndLevelReadsEveryFloatOnce) {
  // 8 x 64 floats is the unit every pattern reads whole; sizes of 1, 3 and 1000 units (the
  // biggest one crosses the loops' 64 KiB flush of the partial sums several times).
  for (int64_t units : {1, 3, 1000}) {
    const int64_t n = units * 512;
    PageBuffer buf(static_cast<uint64_t>(n) * sizeof(float), true);
    float* x = reinterpret_cast<float*>(buf.data());
    const double want = fill(x, n);
    for (cpu::SimdLevel level : test::available_levels()) {
      for (const cpu::ReadPattern& p : cpu::read_patterns()) {
        EXPECT_EQ(cpu::read_floats(level, p, x, n), want)
            << cpu::simd_level_name(level) << " " << p.name() << " n=" << n;
      }
    }
  }
}

TEST(ReadPeak, PatternsAreDistinctAndNamed) {
  std::set<std::string> names;
  for (const cpu::ReadPattern& p : cpu::read_patterns()) {
    EXPECT_TRUE(p.streams == 1 || p.streams == 2 || p.streams == 4 || p.streams == 8) << p.name();
    EXPECT_GE(p.prefetch_bytes, 0) << p.name();
    names.insert(p.name());
  }
  EXPECT_EQ(names.size(), cpu::read_patterns().size());
  EXPECT_EQ((cpu::ReadPattern{4, 1024}.name()), "4 streams, prefetch 1 KiB");
  EXPECT_EQ((cpu::ReadPattern{1, 0}.name()), "1 stream, hardware prefetch");
}

}  // namespace
}  // namespace llmwb
