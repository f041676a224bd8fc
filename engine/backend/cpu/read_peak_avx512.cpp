// read_peak_avx512.cpp — the streaming read loop (read_peak.h, read_peak_simd.inl) with AVX-512: 64-byte loads.
#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/prefetch.h"
#include "backend/cpu/read_peak.h"

namespace llmwb::cpu::kernels {
namespace avx512 {

struct V {
  using reg = __m512;
  static constexpr int kW = 16;   // floats per vector
  static reg zero() { return _mm512_setzero_ps(); }
  static reg add(reg a, reg b) { return _mm512_add_ps(a, b); }
  static reg load(const float* p) { return _mm512_load_ps(p); }
  static void store(float* p, reg v) { _mm512_store_ps(p, v); }
};

#include "backend/cpu/read_peak_simd.inl"

}  // namespace avx512

double read_floats_avx512(int streams, int64_t prefetch_bytes, const float* x, int64_t n) {
  return avx512::read_floats(streams, prefetch_bytes, x, n);
}

}  // namespace llmwb::cpu::kernels
