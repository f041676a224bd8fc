// read_peak_simd.inl — the streaming read loop of read_peak.h, written once for any vector
// width. Included by read_peak_avx2.cpp and read_peak_avx512.cpp inside their own namespace
// (llmwb::cpu::kernels::avx2 / ::avx512) after they define `struct V`: reg, kW (floats per
// vector), zero, add, load and store (aligned). The includer provides <immintrin.h> and
// <cstdint>, as matmul_simd.inl's includers do.

constexpr int kStep = 64;          // floats per stream per step: 256 bytes, four lines

// S contiguous parts of x read side by side; each step loads 256 bytes of every part into
// accumulators of their own (kAcc per stream, so no add waits long on another) and, with
// Prefetch, touches the line pf bytes ahead of each of the four. The partial sums go into a
// double every kChunk floats of a part, so they stay exact however large the buffer.
template <int S, bool Prefetch>
double read_loop(const float* x, int64_t n, int64_t pf) {
  constexpr int kAcc = V::kW == 16 ? 4 : 2;
  constexpr int64_t kChunk = 16384;
  const int64_t part = n / S / kStep * kStep;
  const float* base[S];
  for (int s = 0; s < S; ++s) base[s] = x + s * part;
  double total = 0;
  alignas(64) float lanes[V::kW];
  for (int64_t i0 = 0; i0 < part; i0 += kChunk) {
    const int64_t i1 = i0 + kChunk < part ? i0 + kChunk : part;
    typename V::reg acc[S][kAcc];
#pragma GCC unroll 8
    for (int s = 0; s < S; ++s)
#pragma GCC unroll 8
      for (int u = 0; u < kAcc; ++u) acc[s][u] = V::zero();
    for (int64_t i = i0; i < i1; i += kStep) {
#pragma GCC unroll 8
      for (int s = 0; s < S; ++s) {
        const float* p = base[s] + i;
        if constexpr (Prefetch) {
          const char* q = reinterpret_cast<const char*>(p) + pf;
          prefetch_t0(q);
          prefetch_t0(q + 64);
          prefetch_t0(q + 128);
          prefetch_t0(q + 192);
        }
#pragma GCC unroll 8
        for (int u = 0; u < kStep / V::kW; ++u) acc[s][u % kAcc] = V::add(acc[s][u % kAcc], V::load(p + V::kW * u));
      }
    }
    for (int s = 0; s < S; ++s) {
      for (int u = 0; u < kAcc; ++u) {
        V::store(lanes, acc[s][u]);
        for (float v : lanes) total += v;
      }
    }
  }
  return total;
}

template <bool Prefetch>
double read_streams(int streams, const float* x, int64_t n, int64_t pf) {
  switch (streams) {
    case 1: return read_loop<1, Prefetch>(x, n, pf);
    case 2: return read_loop<2, Prefetch>(x, n, pf);
    case 4: return read_loop<4, Prefetch>(x, n, pf);
    default: return read_loop<8, Prefetch>(x, n, pf);
  }
}

inline double read_floats(int streams, int64_t prefetch_bytes, const float* x, int64_t n) {
  return prefetch_bytes > 0 ? read_streams<true>(streams, x, n, prefetch_bytes) : read_streams<false>(streams, x, n, 0);
}
