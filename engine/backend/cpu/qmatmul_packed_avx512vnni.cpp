// qmatmul_packed_avx512vnni.cpp — the repacked 4-bit kernel with AVX-512 VNNI: one zmm lane
// per row of a 16-row tile (layout in qmatmul_kernels.h), so a vpdpbusd of a 64-byte chunk of
// nibbles with one broadcast activation dword advances 16 rows by four weights, and the
// per-block scale work (convert, scale, two FMAs) is one vector instruction each for 16 rows.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"   // GCC bug 105593, see matmul_avx512.cpp
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/qmatmul_kernels.h"

namespace llmwb::cpu::qkernels {

namespace {

inline __m512i bcast_dword(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// A tile is one contiguous stream of 4-20 KiB per 1000 columns, and the hardware prefetchers
// stop at 4 KiB page boundaries; so while a group is multiplied, the same group of the next
// tile (a tile ahead: above the latency-bandwidth product, far below L2) is prefetched into L2.
inline void prefetch_group(const uint8_t* p, uint64_t bytes) {
  for (uint64_t o = 0; o < bytes; o += 64) _mm_prefetch(reinterpret_cast<const char*>(p + o), _MM_HINT_T1);
}

// Rows [r, r + 16) of one tile (outputs of the rows past a.rows masked off) x tokens
// [t0, t0 + TT). Each (row, token) lane has its own accumulators, so TT changes no bit.
template <bool HasM, int TT>
inline void tile_tokens(const PackedArgs& a, const uint8_t* tile, int64_t r, int64_t t0, __mmask16 mask,
                        const uint8_t* pf) {
  __m512 acc[TT], macc[TT];
  const int8_t* xq[TT];
  const float* xd[TT];
  const float* xc[TT];
#pragma GCC unroll 4
  for (int j = 0; j < TT; ++j) {
    acc[j] = _mm512_setzero_ps();
    macc[j] = _mm512_setzero_ps();
    xq[j] = a.x.q + (t0 + j) * a.x.q_stride;
    xd[j] = a.x.d + (t0 + j) * a.nb;
    xc[j] = a.x.c + (t0 + j) * a.nb;
  }
  const __m512i low = _mm512_set1_epi8(0x0F);
  const int64_t ng = (a.nb + a.gb - 1) / a.gb;
  for (int64_t g = 0; g < ng; ++g) {
    const uint8_t* grp = tile + g * a.group_bytes;
    if (pf != nullptr) prefetch_group(pf + g * a.group_bytes, a.group_bytes);
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(grp)));
    __m512 m;
    if constexpr (HasM) m = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(grp + 32)));
    else m = _mm512_mul_ps(d, _mm512_set1_ps(-8.0f));
    const uint8_t* blk = grp + (HasM ? 64 : 32);
    const int64_t b_end = (g + 1) * a.gb < a.nb ? (g + 1) * a.gb : a.nb;
    for (int64_t b = g * a.gb; b < b_end; ++b, blk += kPackBlockBytes) {
      // The high nibbles stay in place (16 q, 0..240: still a u8 operand of vpdpbusd), so
      // their sums come out 16 times too large, exactly (every product is a multiple of 16)
      // and without overflow (|sum| <= 16 x 240 x 127); one arithmetic shift of the sum
      // replaces a shift of each of the four chunks.
      __m512i lo[4], hi[4];
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) {
        const __m512i w = _mm512_loadu_si512(blk + 64 * v);
        lo[v] = _mm512_and_si512(w, low);
        hi[v] = _mm512_andnot_si512(low, w);
      }
#pragma GCC unroll 4
      for (int j = 0; j < TT; ++j) {
        const int8_t* x = xq[j] + b * kQB;
        __m512i s0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo[0], bcast_dword(x));
        __m512i s1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), hi[0], bcast_dword(x + 4));
#pragma GCC unroll 4
        for (int v = 1; v < 4; ++v) {
          s0 = _mm512_dpbusd_epi32(s0, lo[v], bcast_dword(x + 8 * v));
          s1 = _mm512_dpbusd_epi32(s1, hi[v], bcast_dword(x + 8 * v + 4));
        }
        const __m512 f = _mm512_cvtepi32_ps(_mm512_add_epi32(s0, _mm512_srai_epi32(s1, 4)));
        acc[j] = _mm512_fmadd_ps(f, _mm512_mul_ps(d, _mm512_set1_ps(xd[j][b])), acc[j]);
        macc[j] = _mm512_fmadd_ps(m, _mm512_set1_ps(xc[j][b]), macc[j]);
      }
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < TT; ++j)
    _mm512_mask_storeu_ps(a.y + (t0 + j) * a.y_stride + r, mask, _mm512_add_ps(acc[j], macc[j]));
}

template <bool HasM>
void packed_rows(const PackedArgs& a, int64_t r0, int64_t r1) {
  constexpr int kTokens = 4;
  for (int64_t r = r0; r < r1; r += kPackRows) {
    const int64_t n = r1 - r < kPackRows ? r1 - r : kPackRows;
    const __mmask16 mask = static_cast<__mmask16>((1u << n) - 1u);
    const uint8_t* tile = a.w + (r / kPackRows) * a.tile_bytes;
    int64_t t = 0;
    // The first token tile prefetches the next tile of this range (see prefetch_group).
    const uint8_t* pf = r + kPackRows < r1 ? tile + a.tile_bytes : nullptr;
    for (; t + kTokens <= a.n_tokens; t += kTokens, pf = nullptr) tile_tokens<HasM, kTokens>(a, tile, r, t, mask, pf);
    for (; t < a.n_tokens; ++t, pf = nullptr) tile_tokens<HasM, 1>(a, tile, r, t, mask, pf);
  }
}

}  // namespace

void packed_rows_avx512vnni(const PackedArgs& a, int64_t r0, int64_t r1) {
  if (packed_has_m(a.dtype)) packed_rows<true>(a, r0, r1);
  else packed_rows<false>(a, r0, r1);
}

}  // namespace llmwb::cpu::qkernels
