// read_peak_avx2.cpp — the streaming read loop (read_peak.h, read_peak_simd.inl) with AVX2: 32-byte loads.
#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/prefetch.h"
#include "backend/cpu/read_peak.h"

namespace llmwb::cpu::kernels {
namespace avx2 {

struct V {
  using reg = __m256;
  static constexpr int kW = 8;   // floats per vector
  static reg zero() { return _mm256_setzero_ps(); }
  static reg add(reg a, reg b) { return _mm256_add_ps(a, b); }
  static reg load(const float* p) { return _mm256_load_ps(p); }
  static void store(float* p, reg v) { _mm256_store_ps(p, v); }
};

#include "backend/cpu/read_peak_simd.inl"

}  // namespace avx2

double read_floats_avx2(int streams, int64_t prefetch_bytes, const float* x, int64_t n) {
  return avx2::read_floats(streams, prefetch_bytes, x, n);
}

}  // namespace llmwb::cpu::kernels
