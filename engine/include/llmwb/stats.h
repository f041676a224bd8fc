// stats.h — the median and sample standard deviation of repeated measurements, and TPOT, as the
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

// Time per output token after the first (vLLM's TPOT): (total - TTFT) / (n - 1) seconds, where
// total and TTFT are seconds since the request was added; 0 for fewer than two tokens. The one
// definition the CLI benchmarks, the GUI's status line and its A/B report use.
inline double time_per_output_token(double total_time, double time_to_first_token, size_t n_tokens) {
  return n_tokens > 1 ? (total_time - time_to_first_token) / static_cast<double>(n_tokens - 1) : 0.0;
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
