// read_peak.cpp — the read patterns and the portable read loop.
#include "backend/cpu/read_peak.h"

namespace llmwb::cpu {

std::string ReadPattern::name() const {
  std::string s = std::to_string(streams) + (streams == 1 ? " stream" : " streams");
  if (prefetch_bytes == 0) return s + ", hardware prefetch";
  if (prefetch_bytes % 1024 == 0) return s + ", prefetch " + std::to_string(prefetch_bytes / 1024) + " KiB";
  return s + ", prefetch " + std::to_string(prefetch_bytes) + " B";
}

std::vector<ReadPattern> read_patterns() {
  // One stream as STREAM reads; several, as a GEMV tile walks several weight panels; with the
  // software prefetch that the decode kernels use (1 KiB ahead) and a longer one.
  return {{1, 0}, {4, 0}, {8, 0}, {1, 1024}, {4, 1024}, {8, 1024}, {4, 2048}};
}

double read_floats(SimdLevel level, const ReadPattern& p, const float* x, int64_t n) {
  switch (level) {
    case SimdLevel::Avx512: return kernels::read_floats_avx512(p.streams, p.prefetch_bytes, x, n);
    case SimdLevel::Avx2: return kernels::read_floats_avx2(p.streams, p.prefetch_bytes, x, n);
    case SimdLevel::Scalar: break;
  }
  // Portable: the streams one after another, 8 partial sums each (in double: exact).
  const int s = p.streams;
  const int64_t part = n / s;
  double total = 0;
  for (int st = 0; st < s; ++st) {
    double acc[8] = {};
    const float* q = x + st * part;
    for (int64_t i = 0; i + 8 <= part; i += 8)
      for (int j = 0; j < 8; ++j) acc[j] += q[i + j];
    for (double v : acc) total += v;
  }
  return total;
}

}  // namespace llmwb::cpu
