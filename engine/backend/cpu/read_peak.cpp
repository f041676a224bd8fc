// read_peak.cpp — the read patterns and the portable read loop.
#include "backend/cpu/read_peak.h"

#include <algorithm>
#include <chrono>
#include <unistd.h>

#include "llmwb/errors.h"
#include "memory/page_buffer.h"

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

ReadShare read_share(int64_t n, int ith, int nth) {
  const int64_t b0 = n * ith / nth, b1 = n * (ith + 1) / nth;
  const int64_t lo = (b0 + kReadUnitFloats - 1) / kReadUnitFloats * kReadUnitFloats;
  return {lo, std::max(lo, b1 / kReadUnitFloats * kReadUnitFloats)};
}

uint64_t default_read_buffer_bytes() {
  uint64_t bytes = uint64_t{512} << 20;
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0) bytes = std::max(bytes, 2 * static_cast<uint64_t>(l3));
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0)
    bytes = std::min(bytes, std::max(uint64_t{512} << 20, static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 8));
  return bytes >> 20 << 20;
}

struct ReadProbe::Impl {
  ThreadPool& pool;
  ReadPattern pattern;
  SimdLevel level;
  PageBuffer buf;
  std::vector<int64_t> r0, r1;   // each thread's share, in floats, whole 512-float units
  std::vector<double> sums;
  int64_t read_n = 0;
  Impl(ThreadPool& p, const ReadPattern& pat, SimdLevel l) : pool(p), pattern(pat), level(l) {}
};

ReadProbe::ReadProbe(ThreadPool& pool, uint64_t bytes, const ReadPattern& pattern, SimdLevel level,
                     const std::string& flag)
    : impl_(std::make_unique<Impl>(pool, pattern, level)) {
  const int nth = pool.size();
  const int64_t n = static_cast<int64_t>(bytes / sizeof(float));
  try {
    impl_->buf = PageBuffer(static_cast<uint64_t>(n) * sizeof(float), true);
  } catch (const std::exception&) {
    throw Error(flag, "cannot allocate the " + std::to_string(bytes >> 20) + " MiB buffer of the read passes");
  }
  impl_->r0.resize(static_cast<size_t>(nth));
  impl_->r1.resize(static_cast<size_t>(nth));
  impl_->sums.resize(static_cast<size_t>(nth));
  for (int i = 0; i < nth; ++i) {
    const ReadShare r = read_share(n, i, nth);
    impl_->r0[static_cast<size_t>(i)] = r.begin;
    impl_->r1[static_cast<size_t>(i)] = r.end;
    impl_->read_n += r.end - r.begin;
  }
  float* f = reinterpret_cast<float*>(impl_->buf.data());
  pool.run([&](int ith, int nth_) {
    const int64_t b0 = n * ith / nth_, b1 = n * (ith + 1) / nth_;
    std::fill(f + b0, f + b1, 2.0f);
  });
}

ReadProbe::~ReadProbe() = default;

double ReadProbe::gbps(int passes) {
  double best = 0;
  for (int i = 0; i < passes; ++i) best = std::max(best, one_pass());
  return best;
}

double ReadProbe::one_pass() {
  Impl& m = *impl_;
  const float* f = reinterpret_cast<const float*>(m.buf.data());
  const auto t0 = std::chrono::steady_clock::now();
  m.pool.run([&](int ith, int) {
    const size_t i = static_cast<size_t>(ith);
    m.sums[i] = read_floats(m.level, m.pattern, f + m.r0[i], m.r1[i] - m.r0[i]);
  });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double check = 0;
  for (double v : m.sums) check += v;
  // Every float read once, each 2.0: the sums are exact.
  if (check != 2.0 * static_cast<double>(m.read_n))
    throw Error("read pass", m.pattern.name() + " summed to " + std::to_string(check) + ", expected " +
                                 std::to_string(2.0 * static_cast<double>(m.read_n)));
  return static_cast<double>(m.read_n) * sizeof(float) / s / 1e9;
}

std::string ReadProbe::pick_best_pattern() {
  ReadPattern best = impl_->pattern;
  double best_gbps = 0;
  for (const ReadPattern& p : read_patterns()) {
    impl_->pattern = p;
    const double g = gbps(2);
    if (g > best_gbps) best_gbps = g, best = p;
  }
  impl_->pattern = best;
  return best.name();
}

}  // namespace llmwb::cpu
