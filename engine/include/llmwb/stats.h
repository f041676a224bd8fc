// stats.h — the median and sample standard deviation of repeated measurements, as the
// benchmarks report them (llmwb-cli bench / roofline, the GUI's A/B phases). Empty input
// gives 0, never a read past the end.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace llmwb {

inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Sample standard deviation (n - 1); 0 for fewer than two values.
inline double stddev(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

}  // namespace llmwb
