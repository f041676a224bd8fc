// qmatmul_packed_avx2.cpp — the repacked 4-bit kernel with AVX2: each 16-row tile (layout in
// qmatmul_kernels.h) as two halves of 8 rows, bytes 32 h .. 32 h + 31 of every 64-byte chunk.
// vpmaddubsw of nibbles (<= 15) with a broadcast activation dword (|qx| <= 127) gives int16
// pairs <= 3810; the eight of a block sum to <= 30480 in int16 without saturating, and one
// vpmaddwd makes the int32 block sum: the integers of the VNNI kernel, so the same bits.
#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/prefetch.h"
#include "backend/cpu/qmatmul_kernels.h"

namespace llmwb::cpu::qkernels {

namespace {

inline __m256i bcast_dword(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// A tile is one contiguous stream of 4-20 KiB per 1000 columns, and the hardware prefetchers
// stop at 4 KiB page boundaries; so while a group is multiplied, the same group of the next
// tile (a tile ahead: above the latency-bandwidth product, far below L2) is prefetched into L2.
[[gnu::always_inline]] inline void prefetch_group(const uint8_t* p, uint64_t bytes) {
  for (uint64_t o = 0; o < bytes; o += 64) prefetch_t1(p + o);
}

// Rows [r, r + n) (n <= 8) of half `h` of a tile x tokens [t0, t0 + TT).
template <bool HasM, int TT>
inline void half_tokens(const PackedArgs& a, const uint8_t* tile, int h, int64_t r, int n, int64_t t0,
                        const uint8_t* pf) {
  __m256 acc[TT], macc[TT];
  const int8_t* xq[TT];
  const float* xd[TT];
  const float* xc[TT];
#pragma GCC unroll 4
  for (int j = 0; j < TT; ++j) {
    acc[j] = _mm256_setzero_ps();
    macc[j] = _mm256_setzero_ps();
    xq[j] = a.x.q + (t0 + j) * a.x.q_stride;
    xd[j] = a.x.d + (t0 + j) * a.nb;
    xc[j] = a.x.c + (t0 + j) * a.nb;
  }
  const __m256i low = _mm256_set1_epi8(0x0F);
  const __m256i ones = _mm256_set1_epi16(1);
  const int64_t ng = (a.nb + a.gb - 1) / a.gb;
  for (int64_t g = 0; g < ng; ++g) {
    const uint8_t* grp = tile + g * a.group_bytes;
    if (pf != nullptr) prefetch_group(pf + g * a.group_bytes, a.group_bytes);
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(grp + 16 * h)));
    __m256 m;
    if constexpr (HasM) m = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(grp + 32 + 16 * h)));
    else m = _mm256_mul_ps(d, _mm256_set1_ps(-8.0f));
    const uint8_t* blk = grp + (HasM ? 64 : 32) + 32 * h;
    const int64_t b_end = (g + 1) * a.gb < a.nb ? (g + 1) * a.gb : a.nb;
    for (int64_t b = g * a.gb; b < b_end; ++b, blk += kPackBlockBytes) {
      __m256i lo[4], hi[4];
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) {
        const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 64 * v));
        lo[v] = _mm256_and_si256(w, low);
        hi[v] = _mm256_and_si256(_mm256_srli_epi16(w, 4), low);
      }
#pragma GCC unroll 4
      for (int j = 0; j < TT; ++j) {
        const int8_t* x = xq[j] + b * kQB;
        __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(lo[0], bcast_dword(x)),
                                     _mm256_maddubs_epi16(hi[0], bcast_dword(x + 4)));
#pragma GCC unroll 4
        for (int v = 1; v < 4; ++v) {
          p = _mm256_add_epi16(p, _mm256_maddubs_epi16(lo[v], bcast_dword(x + 8 * v)));
          p = _mm256_add_epi16(p, _mm256_maddubs_epi16(hi[v], bcast_dword(x + 8 * v + 4)));
        }
        const __m256 f = _mm256_cvtepi32_ps(_mm256_madd_epi16(p, ones));
        acc[j] = _mm256_fmadd_ps(f, _mm256_mul_ps(d, _mm256_set1_ps(xd[j][b])), acc[j]);
        macc[j] = _mm256_fmadd_ps(m, _mm256_set1_ps(xc[j][b]), macc[j]);
      }
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < TT; ++j) {
    const __m256 v = _mm256_add_ps(acc[j], macc[j]);
    float* out = a.y + (t0 + j) * a.y_stride + r;
    if (n == 8) {
      _mm256_storeu_ps(out, v);
    } else {
      alignas(32) float tmp[8];
      _mm256_store_ps(tmp, v);
      for (int i = 0; i < n; ++i) out[i] = tmp[i];
    }
  }
}

inline void store_rows(float* out, __m256 v, int n) {
  if (n == 8) {
    _mm256_storeu_ps(out, v);
    return;
  }
  alignas(32) float tmp[8];
  _mm256_store_ps(tmp, v);
  for (int i = 0; i < n; ++i) out[i] = tmp[i];
}

// Eight bytes (one per row) as floats.
inline __m256 bytes_to_ps(const uint8_t* p, bool is_signed) {
  const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return _mm256_cvtepi32_ps(is_signed ? _mm256_cvtepi8_epi32(v) : _mm256_cvtepu8_epi32(v));
}

// Q8_0 and the k-quants (layouts in qmatmul_kernels.h), half h of a tile. The int32 sums
// are those of the VNNI kernel: Q8_0's q with the sign trick (|q| <= 128, so a vpmaddubsw
// pair stays below 2^15) one vpmaddwd per chunk; Q5_K's q <= 31 and Q6_K's q + 32 <= 63 in
// int16 sums of at most four and two pairs.
template <DType DT, int TT>
inline void half_tokens_other(const PackedArgs& a, const uint8_t* tile, int h, int64_t r, int n, int64_t t0,
                              const uint8_t* pf) {
  constexpr bool kQ8 = DT == DType::Q8_0, kQ6 = DT == DType::Q6_K, kQ5 = DT == DType::Q5_K;
  constexpr uint64_t kHead = packed_head_bytes(DT), kBlock = packed_block_bytes(DT);
  __m256 acc[TT], macc[TT];
  const int8_t* xq[TT];
  const float* xd[TT];
  const float* xc[TT];
  const int32_t* xs[TT];
#pragma GCC unroll 4
  for (int j = 0; j < TT; ++j) {
    acc[j] = _mm256_setzero_ps();
    macc[j] = _mm256_setzero_ps();
    xq[j] = a.x.q + (t0 + j) * a.x.q_stride;
    xd[j] = a.x.d + (t0 + j) * a.nb;
    xc[j] = a.x.c + (t0 + j) * a.nb;
    xs[j] = a.x.s16 + (t0 + j) * 2 * a.nb;
  }
  const __m256i low = _mm256_set1_epi8(0x0F);
  const __m256i ones = _mm256_set1_epi16(1);
  const int64_t ng = (a.nb + a.gb - 1) / a.gb;
  for (int64_t g = 0; g < ng; ++g) {
    const uint8_t* grp = tile + g * a.group_bytes;
    if (pf != nullptr) prefetch_group(pf + g * a.group_bytes, a.group_bytes);
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(grp + 16 * h)));
    __m256 dmin = _mm256_setzero_ps();
    if constexpr (!kQ8 && !kQ6) dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(grp + 32 + 16 * h)));
    for (int64_t jb = 0; jb < a.gb; ++jb) {
      const int64_t b = g * a.gb + jb;
      const uint8_t* blk = grp + kHead + jb * kBlock + 32 * h;
      if constexpr (kQ8) {
        __m256i u[8], sg[8];
#pragma GCC unroll 8
        for (int v = 0; v < 8; ++v) {
          const __m256i w = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 64 * v)),
                                             _mm256_set1_epi8(static_cast<char>(0x80)));
          u[v] = _mm256_abs_epi8(w);
          sg[v] = w;
        }
#pragma GCC unroll 4
        for (int j = 0; j < TT; ++j) {
          const int8_t* x = xq[j] + b * kQB;
          __m256i isum = _mm256_setzero_si256();
#pragma GCC unroll 8
          for (int v = 0; v < 8; ++v) {
            const __m256i p = _mm256_maddubs_epi16(u[v], _mm256_sign_epi8(bcast_dword(x + 4 * v), sg[v]));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, ones));
          }
          acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(d, _mm256_set1_ps(xd[j][b])), acc[j]);
        }
        continue;
      }
      __m256i lo[4], hi[4];
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) {
        const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 64 * v));
        lo[v] = _mm256_and_si256(w, low);
        hi[v] = _mm256_and_si256(_mm256_srli_epi16(w, 4), low);
        if constexpr (kQ5) {
          const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 256));
          const __m256i bit4 = _mm256_set1_epi8(0x10);
          lo[v] = _mm256_or_si256(lo[v], _mm256_and_si256(_mm256_slli_epi16(hb, 4 - v), bit4));
          hi[v] = _mm256_or_si256(hi[v], _mm256_and_si256(_mm256_srli_epi16(hb, v), bit4));
        } else if constexpr (kQ6) {
          const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 256 + 64 * (v >> 1)));
          const __m256i bits = _mm256_set1_epi8(0x30);
          const __m256i hl = (v & 1) ? hb : _mm256_slli_epi16(hb, 4);
          const __m256i hh = (v & 1) ? _mm256_srli_epi16(hb, 2) : _mm256_slli_epi16(hb, 2);
          lo[v] = _mm256_or_si256(lo[v], _mm256_and_si256(hl, bits));
          hi[v] = _mm256_or_si256(hi[v], _mm256_and_si256(hh, bits));
        }
      }
      __m256 d0, d1;
      if constexpr (kQ6) {
        d0 = _mm256_mul_ps(d, bytes_to_ps(grp + 32 + 32 * jb + 8 * h, true));
        d1 = _mm256_mul_ps(d, bytes_to_ps(grp + 32 + 32 * jb + 16 + 8 * h, true));
      } else {
        d0 = _mm256_mul_ps(d, bytes_to_ps(grp + 64 + 16 * jb + 8 * h, false));
        d1 = _mm256_mul_ps(dmin, bytes_to_ps(grp + 64 + 128 + 16 * jb + 8 * h, false));
      }
#pragma GCC unroll 4
      for (int j = 0; j < TT; ++j) {
        const int8_t* x = xq[j] + b * kQB;
        const __m256 dx = _mm256_set1_ps(xd[j][b]);
        auto pair = [&](int v) {   // chunk v's eight products per row lane, in int16
          return _mm256_add_epi16(_mm256_maddubs_epi16(lo[v], bcast_dword(x + 8 * v)),
                                  _mm256_maddubs_epi16(hi[v], bcast_dword(x + 8 * v + 4)));
        };
        if constexpr (kQ6) {
          __m256i s0 = _mm256_add_epi32(_mm256_madd_epi16(pair(0), ones), _mm256_madd_epi16(pair(1), ones));
          __m256i s1 = _mm256_add_epi32(_mm256_madd_epi16(pair(2), ones), _mm256_madd_epi16(pair(3), ones));
          s0 = _mm256_sub_epi32(s0, _mm256_set1_epi32(32 * xs[j][2 * b]));
          s1 = _mm256_sub_epi32(s1, _mm256_set1_epi32(32 * xs[j][2 * b + 1]));
          acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0), _mm256_mul_ps(d0, dx), acc[j]);
          acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s1), _mm256_mul_ps(d1, dx), acc[j]);
        } else {
          __m256i isum;
          if constexpr (kQ5) {
            isum = _mm256_add_epi32(_mm256_madd_epi16(_mm256_add_epi16(pair(0), pair(1)), ones),
                                    _mm256_madd_epi16(_mm256_add_epi16(pair(2), pair(3)), ones));
          } else {
            const __m256i p = _mm256_add_epi16(_mm256_add_epi16(pair(0), pair(1)), _mm256_add_epi16(pair(2), pair(3)));
            isum = _mm256_madd_epi16(p, ones);
          }
          acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(d0, dx), acc[j]);
          macc[j] = _mm256_fnmadd_ps(d1, _mm256_set1_ps(xc[j][b]), macc[j]);
        }
      }
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < TT; ++j)
    store_rows(a.y + (t0 + j) * a.y_stride + r, kQ8 || kQ6 ? acc[j] : _mm256_add_ps(acc[j], macc[j]), n);
}

template <DType DT, int TT>
inline void half_tokens_of(const PackedArgs& a, const uint8_t* tile, int h, int64_t r, int n, int64_t t0,
                           const uint8_t* pf) {
  if constexpr (DT == DType::Q8_0 || DT == DType::Q4_K || DT == DType::Q5_K || DT == DType::Q6_K)
    half_tokens_other<DT, TT>(a, tile, h, r, n, t0, pf);
  else if constexpr (DT == DType::Q4_0) half_tokens<false, TT>(a, tile, h, r, n, t0, pf);
  else half_tokens<true, TT>(a, tile, h, r, n, t0, pf);
}

// ------------------------------------------------------------------------------ decode
// One token (decode; see qmatmul_packed_avx512vnni.cpp): R tiles read side by side as
// sequential streams, both 8-row halves of each in the same pass (so each 64-byte chunk is
// used whole as it arrives, and the tile is read once instead of once per half), every line
// prefetched into L1 PackedArgs::prefetch bytes ahead. Each half does the integer and float
// operations of the tile kernels above in the same order: the same bits.
constexpr int kDecodeTiles = kAvx2DecodeTiles;   // 2 tiles x 2 halves: 4 accumulator sets in 16 ymm registers

// `Lines` lines from p + ahead into L1 (ahead: PackedArgs::prefetch; 0 = none).
template <int Lines>
[[gnu::always_inline]] inline void prefetch_l1(const uint8_t* p, int64_t ahead) {
  if (ahead == 0) return;
#pragma GCC unroll 16
  for (int l = 0; l < Lines; ++l) prefetch_t0_pinned(p + ahead + 64 * l);
}

// The Q4_0 / Q4_1 / INT4 family (half_tokens).
template <bool HasM, int R>
[[gnu::always_inline]] inline void decode_q4(const PackedArgs& a, const uint8_t* tile, int64_t r, const int* nrows) {
  __m256 acc[2 * R], macc[2 * R];
#pragma GCC unroll 8
  for (int q = 0; q < 2 * R; ++q) acc[q] = macc[q] = _mm256_setzero_ps();
  const __m256i low = _mm256_set1_epi8(0x0F);
  const __m256i ones = _mm256_set1_epi16(1);
  const uint64_t tb = a.tile_bytes;
  const int64_t ng = (a.nb + a.gb - 1) / a.gb;
  for (int64_t g = 0; g < ng; ++g) {
    const uint8_t* grp = tile + g * a.group_bytes;
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) prefetch_l1<1>(grp + i * tb, a.prefetch);
    const uint8_t* blk = grp + (HasM ? 64 : 32);
    const int64_t b_end = (g + 1) * a.gb < a.nb ? (g + 1) * a.gb : a.nb;
    for (int64_t b = g * a.gb; b < b_end; ++b, blk += kPackBlockBytes) {
      const int8_t* x = a.x.q + b * kQB;
      const __m256 dx = _mm256_set1_ps(a.x.d[b]), cx = _mm256_set1_ps(a.x.c[b]);
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) {
        const uint8_t* w = blk + i * tb;
        prefetch_l1<4>(w, a.prefetch);
        __m256i p[2];
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) {
          const __m256i xl = bcast_dword(x + 8 * v), xh = bcast_dword(x + 8 * v + 4);
#pragma GCC unroll 2
          for (int h = 0; h < 2; ++h) {
            const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 64 * v + 32 * h));
            const __m256i t = _mm256_add_epi16(_mm256_maddubs_epi16(_mm256_and_si256(wv, low), xl),
                                               _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(wv, 4), low), xh));
            p[h] = v == 0 ? t : _mm256_add_epi16(p[h], t);
          }
        }
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
          const uint8_t* gh = grp + i * tb + 16 * h;
          const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gh)));
          __m256 m;
          if constexpr (HasM) m = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gh + 32)));
          else m = _mm256_mul_ps(d, _mm256_set1_ps(-8.0f));
          const __m256 f = _mm256_cvtepi32_ps(_mm256_madd_epi16(p[h], ones));
          acc[2 * i + h] = _mm256_fmadd_ps(f, _mm256_mul_ps(d, dx), acc[2 * i + h]);
          macc[2 * i + h] = _mm256_fmadd_ps(m, cx, macc[2 * i + h]);
        }
      }
    }
  }
#pragma GCC unroll 8
  for (int q = 0; q < 2 * R; ++q) {
    if (nrows[q] > 0) store_rows(a.y + r + 8 * q, _mm256_add_ps(acc[q], macc[q]), nrows[q]);
  }
}

// Q8_0 and the k-quants (half_tokens_other).
template <DType DT, int R>
[[gnu::always_inline]] inline void decode_other(const PackedArgs& a, const uint8_t* tile, int64_t r, const int* nrows) {
  constexpr bool kQ8 = DT == DType::Q8_0, kQ6 = DT == DType::Q6_K, kQ5 = DT == DType::Q5_K;
  constexpr uint64_t kHead = packed_head_bytes(DT), kBlock = packed_block_bytes(DT);
  __m256 acc[2 * R], macc[2 * R];
#pragma GCC unroll 8
  for (int q = 0; q < 2 * R; ++q) acc[q] = macc[q] = _mm256_setzero_ps();
  const __m256i low = _mm256_set1_epi8(0x0F);
  const __m256i ones = _mm256_set1_epi16(1);
  const uint64_t tb = a.tile_bytes;
  const int64_t ng = (a.nb + a.gb - 1) / a.gb;
  for (int64_t g = 0; g < ng; ++g) {
    const uint8_t* grp = tile + g * a.group_bytes;
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) prefetch_l1<(kHead + 63) / 64>(grp + i * tb, a.prefetch);
    for (int64_t jb = 0; jb < a.gb; ++jb) {
      const int64_t b = g * a.gb + jb;
      const int8_t* x = a.x.q + b * kQB;
      const __m256 dx = _mm256_set1_ps(a.x.d[b]);
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) {
        const uint8_t* g0 = grp + i * tb;
        const uint8_t* blk0 = g0 + kHead + jb * kBlock;
        prefetch_l1<kBlock / 64>(blk0, a.prefetch);
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
          const int q = 2 * i + h;
          const uint8_t* blk = blk0 + 32 * h;
          const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g0 + 16 * h)));
          if constexpr (kQ8) {
            __m256i isum = _mm256_setzero_si256();
#pragma GCC unroll 8
            for (int v = 0; v < 8; ++v) {
              const __m256i w = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 64 * v)),
                                                 _mm256_set1_epi8(static_cast<char>(0x80)));
              const __m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(bcast_dword(x + 4 * v), w));
              isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, ones));
            }
            acc[q] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(d, dx), acc[q]);
            continue;
          }
          __m256i lo[4], hi[4];
#pragma GCC unroll 4
          for (int v = 0; v < 4; ++v) {
            const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 64 * v));
            lo[v] = _mm256_and_si256(w, low);
            hi[v] = _mm256_and_si256(_mm256_srli_epi16(w, 4), low);
            if constexpr (kQ5) {
              const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 256));
              const __m256i bit4 = _mm256_set1_epi8(0x10);
              lo[v] = _mm256_or_si256(lo[v], _mm256_and_si256(_mm256_slli_epi16(hb, 4 - v), bit4));
              hi[v] = _mm256_or_si256(hi[v], _mm256_and_si256(_mm256_srli_epi16(hb, v), bit4));
            } else if constexpr (kQ6) {
              const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 256 + 64 * (v >> 1)));
              const __m256i bits = _mm256_set1_epi8(0x30);
              const __m256i hl = (v & 1) ? hb : _mm256_slli_epi16(hb, 4);
              const __m256i hh = (v & 1) ? _mm256_srli_epi16(hb, 2) : _mm256_slli_epi16(hb, 2);
              lo[v] = _mm256_or_si256(lo[v], _mm256_and_si256(hl, bits));
              hi[v] = _mm256_or_si256(hi[v], _mm256_and_si256(hh, bits));
            }
          }
          auto pair = [&](int v) {   // chunk v's eight products per row lane, in int16
            return _mm256_add_epi16(_mm256_maddubs_epi16(lo[v], bcast_dword(x + 8 * v)),
                                    _mm256_maddubs_epi16(hi[v], bcast_dword(x + 8 * v + 4)));
          };
          if constexpr (kQ6) {
            const __m256 d0 = _mm256_mul_ps(d, bytes_to_ps(g0 + 32 + 32 * jb + 8 * h, true));
            const __m256 d1 = _mm256_mul_ps(d, bytes_to_ps(g0 + 32 + 32 * jb + 16 + 8 * h, true));
            __m256i s0 = _mm256_add_epi32(_mm256_madd_epi16(pair(0), ones), _mm256_madd_epi16(pair(1), ones));
            __m256i s1 = _mm256_add_epi32(_mm256_madd_epi16(pair(2), ones), _mm256_madd_epi16(pair(3), ones));
            s0 = _mm256_sub_epi32(s0, _mm256_set1_epi32(32 * a.x.s16[2 * b]));
            s1 = _mm256_sub_epi32(s1, _mm256_set1_epi32(32 * a.x.s16[2 * b + 1]));
            acc[q] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0), _mm256_mul_ps(d0, dx), acc[q]);
            acc[q] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s1), _mm256_mul_ps(d1, dx), acc[q]);
          } else {
            const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g0 + 32 + 16 * h)));
            const __m256 d0 = _mm256_mul_ps(d, bytes_to_ps(g0 + 64 + 16 * jb + 8 * h, false));
            const __m256 d1 = _mm256_mul_ps(dmin, bytes_to_ps(g0 + 64 + 128 + 16 * jb + 8 * h, false));
            __m256i isum;
            if constexpr (kQ5) {
              isum = _mm256_add_epi32(_mm256_madd_epi16(_mm256_add_epi16(pair(0), pair(1)), ones),
                                      _mm256_madd_epi16(_mm256_add_epi16(pair(2), pair(3)), ones));
            } else {
              const __m256i p = _mm256_add_epi16(_mm256_add_epi16(pair(0), pair(1)), _mm256_add_epi16(pair(2), pair(3)));
              isum = _mm256_madd_epi16(p, ones);
            }
            acc[q] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(d0, dx), acc[q]);
            macc[q] = _mm256_fnmadd_ps(d1, _mm256_set1_ps(a.x.c[b]), macc[q]);
          }
        }
      }
    }
  }
#pragma GCC unroll 8
  for (int q = 0; q < 2 * R; ++q) {
    if (nrows[q] > 0) store_rows(a.y + r + 8 * q, kQ8 || kQ6 ? acc[q] : _mm256_add_ps(acc[q], macc[q]), nrows[q]);
  }
}

// Not inlined: one call per 1-4 tiles, and the symbol the CTest decode_kernels_keep_their_
// prefetches finds each kernel by (the kernels below are inlined into it).
template <DType DT, int R>
[[gnu::noinline]] void decode_of(const PackedArgs& a, const uint8_t* tile, int64_t r, const int* nrows) {
  if constexpr (DT == DType::Q8_0 || DT == DType::Q4_K || DT == DType::Q5_K || DT == DType::Q6_K)
    decode_other<DT, R>(a, tile, r, nrows);
  else if constexpr (DT == DType::Q4_0) decode_q4<false, R>(a, tile, r, nrows);
  else decode_q4<true, R>(a, tile, r, nrows);
}

// Rows [r0, r1) for one token, a.streams tiles at a time, at most kDecodeTiles (fewer at the end).
template <DType DT>
void decode_rows(const PackedArgs& a, int64_t r0, int64_t r1) {
  for_each_decode_group<kDecodeTiles>(a, r0, r1, [&](const uint8_t* tile, int64_t r, int n, const int* valid) {
    int nrows[2 * kDecodeTiles];   // valid rows of each 8-row half
    for (int i = 0; i < n; ++i) {
      nrows[2 * i] = valid[i] < 8 ? valid[i] : 8;
      nrows[2 * i + 1] = valid[i] > 8 ? valid[i] - 8 : 0;
    }
    if (n == 2) decode_of<DT, 2>(a, tile, r, nrows);
    else decode_of<DT, 1>(a, tile, r, nrows);
  });
}

template <DType DT>
void packed_rows(const PackedArgs& a, int64_t r0, int64_t r1) {
  if (a.n_tokens == 1) {
    decode_rows<DT>(a, r0, r1);
    return;
  }
  constexpr int kTokens = 2;
  for (int64_t r = r0; r < r1; r += kPackRows) {
    const uint8_t* tile = a.w + (r / kPackRows) * a.tile_bytes;
    for (int h = 0; h < 2; ++h) {
      const int64_t rh = r + 8 * h;
      if (rh >= r1) break;
      const int n = static_cast<int>(r1 - rh < 8 ? r1 - rh : 8);
      // The first pass over the tile prefetches the next tile of this range (prefetch_group).
      const uint8_t* pf = h == 0 && r + kPackRows < r1 ? tile + a.tile_bytes : nullptr;
      int64_t t = 0;
      for (; t + kTokens <= a.n_tokens; t += kTokens, pf = nullptr) half_tokens_of<DT, kTokens>(a, tile, h, rh, n, t, pf);
      for (; t < a.n_tokens; ++t, pf = nullptr) half_tokens_of<DT, 1>(a, tile, h, rh, n, t, pf);
    }
  }
}

}  // namespace

void packed_rows_avx2(const PackedArgs& a, int64_t r0, int64_t r1) {
  switch (a.dtype) {
    case DType::Q4_0: packed_rows<DType::Q4_0>(a, r0, r1); return;
    case DType::Q8_0: packed_rows<DType::Q8_0>(a, r0, r1); return;
    case DType::Q4_K: packed_rows<DType::Q4_K>(a, r0, r1); return;
    case DType::Q5_K: packed_rows<DType::Q5_K>(a, r0, r1); return;
    case DType::Q6_K: packed_rows<DType::Q6_K>(a, r0, r1); return;
    default: packed_rows<DType::Q4_1>(a, r0, r1); return;   // the offset layouts: Q4_1, INT4_G32, INT4_G128
  }
}

}  // namespace llmwb::cpu::qkernels
