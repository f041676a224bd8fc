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

#include "backend/cpu/prefetch.h"
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
[[gnu::always_inline]] inline void prefetch_group(const uint8_t* p, uint64_t bytes) {
  for (uint64_t o = 0; o < bytes; o += 64) prefetch_t1(p + o);
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

// Q8_0 (layout in qmatmul_kernels.h): eight 64-byte chunks of q + 128 per block, one
// vpdpbusd each per token; 128 x the activation block's sum taken off the int32 sum.
template <int TT>
inline void tile_tokens_q8(const PackedArgs& a, const uint8_t* tile, int64_t r, int64_t t0, __mmask16 mask,
                           const uint8_t* pf) {
  __m512 acc[TT];
  const int8_t* xq[TT];
  const float* xd[TT];
  const int32_t* xs[TT];
#pragma GCC unroll 4
  for (int j = 0; j < TT; ++j) {
    acc[j] = _mm512_setzero_ps();
    xq[j] = a.x.q + (t0 + j) * a.x.q_stride;
    xd[j] = a.x.d + (t0 + j) * a.nb;
    xs[j] = a.x.s16 + (t0 + j) * 2 * a.nb;
  }
  for (int64_t b = 0; b < a.nb; ++b) {
    const uint8_t* grp = tile + b * a.group_bytes;
    if (pf != nullptr) prefetch_group(pf + b * a.group_bytes, a.group_bytes);
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(grp)));
    __m512i w[8];
#pragma GCC unroll 8
    for (int v = 0; v < 8; ++v) w[v] = _mm512_loadu_si512(grp + 32 + 64 * v);
#pragma GCC unroll 4
    for (int j = 0; j < TT; ++j) {
      const int8_t* x = xq[j] + b * kQB;
      __m512i s0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[0], bcast_dword(x));
      __m512i s1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[1], bcast_dword(x + 4));
#pragma GCC unroll 4
      for (int v = 2; v < 8; v += 2) {
        s0 = _mm512_dpbusd_epi32(s0, w[v], bcast_dword(x + 4 * v));
        s1 = _mm512_dpbusd_epi32(s1, w[v + 1], bcast_dword(x + 4 * v + 4));
      }
      const int32_t off = (xs[j][2 * b] + xs[j][2 * b + 1]) * 128;
      const __m512i isum = _mm512_sub_epi32(_mm512_add_epi32(s0, s1), _mm512_set1_epi32(off));
      acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(d, _mm512_set1_ps(xd[j][b])), acc[j]);
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < TT; ++j) _mm512_mask_storeu_ps(a.y + (t0 + j) * a.y_stride + r, mask, acc[j]);
}

inline __m512 bytes_to_ps(const uint8_t* p, bool is_signed) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm512_cvtepi32_ps(is_signed ? _mm512_cvtepi8_epi32(v) : _mm512_cvtepu8_epi32(v));
}

// vpternlogd immediate for c ? a : b (a = 0xF0, b = 0xCC, c = 0xAA): with c = 0x0F in every
// byte, bits 0-3 come from a and bits 4-7 from b, so a nibble and its top bits (at bits 4-5,
// the rest of b zero) merge in one instruction.
constexpr int kSelect = 0xE4;

// Q5_K: the fifth bits of chunk v's low (high = false: bit v of each byte) or high elements
// (bit 4 + v) at bit 4, the rest zero.
inline __m512i q5_top(__m512i hb, int v, bool high) {
  const __m512i t = high ? (v == 0 ? hb : _mm512_srli_epi16(hb, v)) : _mm512_slli_epi16(hb, 4 - v);
  return _mm512_and_si512(t, _mm512_set1_epi8(0x10));
}

// Q6_K: the top two bits of chunk v's low (bits 4 (v & 1), + 1 of its plane's bytes) or high
// elements (4 (v & 1) + 2, + 3) at bits 4-5, the rest zero.
inline __m512i q6_top(__m512i hb, int v, bool high) {
  const int s = 4 * (v & 1) + (high ? 2 : 0);
  const __m512i t = s == 4 ? hb : s > 4 ? _mm512_srli_epi16(hb, s - 4) : _mm512_slli_epi16(hb, 4 - s);
  return _mm512_and_si512(t, _mm512_set1_epi8(0x30));
}

// One k-quant block's eight vpdpbusd operands (layouts in qmatmul_kernels.h): lo[v] / hi[v]
// the low / high elements of chunk v. Q4_K's hi stay 16 q (see tile_tokens).
template <DType DT>
inline void unpack_k(const uint8_t* blk, __m512i* lo, __m512i* hi) {
  const __m512i low = _mm512_set1_epi8(0x0F);
#pragma GCC unroll 4
  for (int v = 0; v < 4; ++v) {
    const __m512i w = _mm512_loadu_si512(blk + 64 * v);
    if constexpr (DT == DType::Q4_K) {
      lo[v] = _mm512_and_si512(w, low);
      hi[v] = _mm512_andnot_si512(low, w);
    } else {
      const __m512i hb = _mm512_loadu_si512(blk + 256 + (DT == DType::Q6_K ? 64 * (v >> 1) : 0));
      const __m512i tl = DT == DType::Q6_K ? q6_top(hb, v, false) : q5_top(hb, v, false);
      const __m512i th = DT == DType::Q6_K ? q6_top(hb, v, true) : q5_top(hb, v, true);
      lo[v] = _mm512_ternarylogic_epi32(w, tl, low, kSelect);
      hi[v] = _mm512_ternarylogic_epi32(_mm512_srli_epi16(w, 4), th, low, kSelect);
    }
  }
}

// The k-quants (layouts in qmatmul_kernels.h): a group is a super-block of eight blocks whose
// per-row sub-block scales (bytes) become float vectors once per block for all TT tokens.
template <DType DT, int TT>
inline void tile_tokens_k(const PackedArgs& a, const uint8_t* tile, int64_t r, int64_t t0, __mmask16 mask,
                          const uint8_t* pf) {
  constexpr bool kQ6 = DT == DType::Q6_K, kQ5 = DT == DType::Q5_K;
  constexpr uint64_t kHead = packed_head_bytes(DT), kBlock = packed_block_bytes(DT);
  __m512 acc[TT], macc[TT];
  const int8_t* xq[TT];
  const float* xd[TT];
  const float* xc[TT];
  const int32_t* xs[TT];
#pragma GCC unroll 4
  for (int j = 0; j < TT; ++j) {
    acc[j] = _mm512_setzero_ps();
    macc[j] = _mm512_setzero_ps();
    xq[j] = a.x.q + (t0 + j) * a.x.q_stride;
    xd[j] = a.x.d + (t0 + j) * a.nb;
    xc[j] = a.x.c + (t0 + j) * a.nb;
    xs[j] = a.x.s16 + (t0 + j) * 2 * a.nb;
  }
  const int64_t ng = a.nb / 8;
  for (int64_t g = 0; g < ng; ++g) {
    const uint8_t* grp = tile + g * a.group_bytes;
    const uint8_t* pfg = pf != nullptr ? pf + g * a.group_bytes : nullptr;
    if (pfg != nullptr) prefetch_group(pfg, kHead);
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(grp)));
    __m512 dmin = _mm512_setzero_ps();
    if constexpr (!kQ6) dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(grp + 32)));
#pragma GCC unroll 1
    for (int jb = 0; jb < 8; ++jb) {
      const int64_t b = g * 8 + jb;
      const uint8_t* blk = grp + kHead + jb * kBlock;
      if (pfg != nullptr) prefetch_group(pfg + kHead + jb * kBlock, kBlock);
      __m512i lo[4], hi[4];
      unpack_k<DT>(blk, lo, hi);
      __m512 d0, d1;
      if constexpr (kQ6) {
        d0 = _mm512_mul_ps(d, bytes_to_ps(grp + 32 + 32 * jb, true));
        d1 = _mm512_mul_ps(d, bytes_to_ps(grp + 32 + 32 * jb + 16, true));
      } else {
        d0 = _mm512_mul_ps(d, bytes_to_ps(grp + 64 + 16 * jb, false));
        d1 = _mm512_mul_ps(dmin, bytes_to_ps(grp + 64 + 128 + 16 * jb, false));
      }
#pragma GCC unroll 4
      for (int j = 0; j < TT; ++j) {
        const int8_t* x = xq[j] + b * kQB;
        const __m512 dx = _mm512_set1_ps(xd[j][b]);
        if constexpr (kQ6) {
          __m512i s0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo[0], bcast_dword(x));
          __m512i s1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo[2], bcast_dword(x + 16));
          s0 = _mm512_dpbusd_epi32(s0, hi[0], bcast_dword(x + 4));
          s1 = _mm512_dpbusd_epi32(s1, hi[2], bcast_dword(x + 20));
          s0 = _mm512_dpbusd_epi32(s0, lo[1], bcast_dword(x + 8));
          s1 = _mm512_dpbusd_epi32(s1, lo[3], bcast_dword(x + 24));
          s0 = _mm512_dpbusd_epi32(s0, hi[1], bcast_dword(x + 12));
          s1 = _mm512_dpbusd_epi32(s1, hi[3], bcast_dword(x + 28));
          s0 = _mm512_sub_epi32(s0, _mm512_set1_epi32(32 * xs[j][2 * b]));
          s1 = _mm512_sub_epi32(s1, _mm512_set1_epi32(32 * xs[j][2 * b + 1]));
          acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s0), _mm512_mul_ps(d0, dx), acc[j]);
          acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s1), _mm512_mul_ps(d1, dx), acc[j]);
        } else {
          __m512i s0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo[0], bcast_dword(x));
          __m512i s1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), hi[0], bcast_dword(x + 4));
#pragma GCC unroll 4
          for (int v = 1; v < 4; ++v) {
            s0 = _mm512_dpbusd_epi32(s0, lo[v], bcast_dword(x + 8 * v));
            s1 = _mm512_dpbusd_epi32(s1, hi[v], bcast_dword(x + 8 * v + 4));
          }
          const __m512i isum = kQ5 ? _mm512_add_epi32(s0, s1) : _mm512_add_epi32(s0, _mm512_srai_epi32(s1, 4));
          acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(d0, dx), acc[j]);
          macc[j] = _mm512_fnmadd_ps(d1, _mm512_set1_ps(xc[j][b]), macc[j]);
        }
      }
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < TT; ++j)
    _mm512_mask_storeu_ps(a.y + (t0 + j) * a.y_stride + r, mask, kQ6 ? acc[j] : _mm512_add_ps(acc[j], macc[j]));
}

template <DType DT, int TT>
inline void tile_tokens_of(const PackedArgs& a, const uint8_t* tile, int64_t r, int64_t t0, __mmask16 mask,
                           const uint8_t* pf) {
  if constexpr (DT == DType::Q8_0) tile_tokens_q8<TT>(a, tile, r, t0, mask, pf);
  else if constexpr (DT == DType::Q4_K || DT == DType::Q5_K || DT == DType::Q6_K) tile_tokens_k<DT, TT>(a, tile, r, t0, mask, pf);
  else if constexpr (DT == DType::Q4_0) tile_tokens<false, TT>(a, tile, r, t0, mask, pf);
  else tile_tokens<true, TT>(a, tile, r, t0, mask, pf);
}

// ------------------------------------------------------------------------------ decode
// One token (decode): a GEMV that streams every weight byte once, so what bounds it is how
// many lines a core keeps in flight and how few instructions a block costs. R adjacent tiles
// (PackedArgs::streams, at most kDecodeTiles) are read side by side as R sequential streams
// (as the float panels' GEMV reads 4 panels), each line prefetched into L1 PackedArgs::prefetch bytes ahead of where its stream reads (past the
// 4 KiB page ends, where the hardware prefetchers stop), and the activation block (8 dwords,
// its scale and offset) is broadcast once per block for all R tiles. Every (row) lane does
// the float operations of tile_tokens<.., 1> in the same order, so the bits are the same.
constexpr int kDecodeTiles = kAvx512DecodeTiles;

// `Lines` lines from p + ahead into L1 (ahead: PackedArgs::prefetch; 0 = none).
template <int Lines>
[[gnu::always_inline]] inline void prefetch_l1(const uint8_t* p, int64_t ahead) {
  if (ahead == 0) return;
#pragma GCC unroll 16
  for (int l = 0; l < Lines; ++l) prefetch_t0_pinned(p + ahead + 64 * l);
}

inline void bcast_block(const int8_t* x, __m512i* xb) {
#pragma GCC unroll 8
  for (int v = 0; v < 8; ++v) xb[v] = bcast_dword(x + 4 * v);
}

// The Q4_0 / Q4_1 / INT4 family (tile_tokens): one block of R tiles.
template <bool HasM, int R>
inline void decode_q4_block(const PackedArgs& a, const uint8_t* blk, int64_t b, const __m512* d, const __m512* m,
                            __m512* acc, __m512* macc) {
  const __m512i low = _mm512_set1_epi8(0x0F);
  const uint64_t tb = a.tile_bytes;
  __m512i xb[8];
  bcast_block(a.x.q + b * kQB, xb);
  const __m512 dx = _mm512_set1_ps(a.x.d[b]), cx = _mm512_set1_ps(a.x.c[b]);
#pragma GCC unroll 4
  for (int i = 0; i < R; ++i) {
    const uint8_t* w = blk + i * tb;
    prefetch_l1<4>(w, a.prefetch);
    __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) {
      const __m512i wv = _mm512_loadu_si512(w + 64 * v);
      s0 = _mm512_dpbusd_epi32(s0, _mm512_and_si512(wv, low), xb[2 * v]);
      s1 = _mm512_dpbusd_epi32(s1, _mm512_andnot_si512(low, wv), xb[2 * v + 1]);   // 16 q (tile_tokens)
    }
    const __m512 f = _mm512_cvtepi32_ps(_mm512_add_epi32(s0, _mm512_srai_epi32(s1, 4)));
    acc[i] = _mm512_fmadd_ps(f, _mm512_mul_ps(d[i], dx), acc[i]);
    macc[i] = _mm512_fmadd_ps(m[i], cx, macc[i]);
  }
}

template <bool HasM, int R>
inline void decode_q4_scales(const PackedArgs& a, const uint8_t* grp, __m512* d, __m512* m) {
#pragma GCC unroll 4
  for (int i = 0; i < R; ++i) {
    const uint8_t* g = grp + i * a.tile_bytes;
    prefetch_l1<1>(g, a.prefetch);   // the scales (32 or 64 bytes, one line)
    d[i] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g)));
    if constexpr (HasM) m[i] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + 32)));
    else m[i] = _mm512_mul_ps(d[i], _mm512_set1_ps(-8.0f));
  }
}

template <bool HasM, int R>
[[gnu::always_inline]] inline void decode_q4(const PackedArgs& a, const uint8_t* tile, int64_t r, const __mmask16* mask) {
  __m512 acc[R], macc[R], d[R], m[R];
#pragma GCC unroll 4
  for (int i = 0; i < R; ++i) acc[i] = macc[i] = _mm512_setzero_ps();
  constexpr uint64_t kHead = HasM ? 64 : 32;
  if (a.gb == 1) {   // a group per block (all but INT4_G128): one flat loop
    for (int64_t b = 0; b < a.nb; ++b) {
      const uint8_t* grp = tile + b * a.group_bytes;
      decode_q4_scales<HasM, R>(a, grp, d, m);
      decode_q4_block<HasM, R>(a, grp + kHead, b, d, m, acc, macc);
    }
  } else {
    const int64_t ng = (a.nb + a.gb - 1) / a.gb;
    for (int64_t g = 0; g < ng; ++g) {
      const uint8_t* grp = tile + g * a.group_bytes;
      decode_q4_scales<HasM, R>(a, grp, d, m);
      const uint8_t* blk = grp + kHead;
      const int64_t b_end = (g + 1) * a.gb < a.nb ? (g + 1) * a.gb : a.nb;
      for (int64_t b = g * a.gb; b < b_end; ++b, blk += kPackBlockBytes) decode_q4_block<HasM, R>(a, blk, b, d, m, acc, macc);
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < R; ++i) _mm512_mask_storeu_ps(a.y + r + 16 * i, mask[i], _mm512_add_ps(acc[i], macc[i]));
}

// Q8_0 (tile_tokens_q8).
template <int R>
[[gnu::always_inline]] inline void decode_q8(const PackedArgs& a, const uint8_t* tile, int64_t r, const __mmask16* mask) {
  __m512 acc[R];
#pragma GCC unroll 4
  for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps();
  const uint64_t tb = a.tile_bytes;
  for (int64_t b = 0; b < a.nb; ++b) {
    const uint8_t* grp = tile + b * a.group_bytes;
    __m512i xb[8];
    bcast_block(a.x.q + b * kQB, xb);
    const __m512 dx = _mm512_set1_ps(a.x.d[b]);
    const __m512i off = _mm512_set1_epi32((a.x.s16[2 * b] + a.x.s16[2 * b + 1]) * 128);
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) {
      const uint8_t* g = grp + i * tb;
      prefetch_l1<9>(g, a.prefetch);   // 32 + 512 bytes
      const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g)));
      __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int v = 0; v < 8; v += 2) {
        s0 = _mm512_dpbusd_epi32(s0, _mm512_loadu_si512(g + 32 + 64 * v), xb[v]);
        s1 = _mm512_dpbusd_epi32(s1, _mm512_loadu_si512(g + 32 + 64 * v + 64), xb[v + 1]);
      }
      const __m512i isum = _mm512_sub_epi32(_mm512_add_epi32(s0, s1), off);
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(d, dx), acc[i]);
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < R; ++i) _mm512_mask_storeu_ps(a.y + r + 16 * i, mask[i], acc[i]);
}

// The k-quants (tile_tokens_k).
template <DType DT, int R>
[[gnu::always_inline]] inline void decode_k(const PackedArgs& a, const uint8_t* tile, int64_t r, const __mmask16* mask) {
  constexpr bool kQ6 = DT == DType::Q6_K, kQ5 = DT == DType::Q5_K;
  constexpr uint64_t kHead = packed_head_bytes(DT), kBlock = packed_block_bytes(DT);
  __m512 acc[R], macc[R];
#pragma GCC unroll 4
  for (int i = 0; i < R; ++i) acc[i] = macc[i] = _mm512_setzero_ps();
  const uint64_t tb = a.tile_bytes;
  const int64_t ng = a.nb / 8;
  for (int64_t g = 0; g < ng; ++g) {
    const uint8_t* grp = tile + g * a.group_bytes;
    __m512 d[R], dmin[R];
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) {
      prefetch_l1<(kHead + 63) / 64>(grp + i * tb, a.prefetch);
      d[i] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(grp + i * tb)));
      if constexpr (!kQ6) dmin[i] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(grp + i * tb + 32)));
      else dmin[i] = _mm512_setzero_ps();
    }
#pragma GCC unroll 1
    for (int jb = 0; jb < 8; ++jb) {
      const int64_t b = g * 8 + jb;
      __m512i xb[8];
      bcast_block(a.x.q + b * kQB, xb);
      const __m512 dx = _mm512_set1_ps(a.x.d[b]);
      __m512i off0 = _mm512_setzero_si512(), off1 = _mm512_setzero_si512();
      __m512 cx = _mm512_setzero_ps();
      if constexpr (kQ6) {
        off0 = _mm512_set1_epi32(32 * a.x.s16[2 * b]);
        off1 = _mm512_set1_epi32(32 * a.x.s16[2 * b + 1]);
      } else {
        cx = _mm512_set1_ps(a.x.c[b]);
      }
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) {
        const uint8_t* g0 = grp + i * tb;
        const uint8_t* blk = g0 + kHead + jb * kBlock;
        prefetch_l1<kBlock / 64>(blk, a.prefetch);
        __m512i lo[4], hi[4];
        unpack_k<DT>(blk, lo, hi);
        if constexpr (kQ6) {
          const __m512 d0 = _mm512_mul_ps(d[i], bytes_to_ps(g0 + 32 + 32 * jb, true));
          const __m512 d1 = _mm512_mul_ps(d[i], bytes_to_ps(g0 + 32 + 32 * jb + 16, true));
          __m512i s0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo[0], xb[0]);
          __m512i s1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo[2], xb[4]);
          s0 = _mm512_dpbusd_epi32(s0, hi[0], xb[1]);
          s1 = _mm512_dpbusd_epi32(s1, hi[2], xb[5]);
          s0 = _mm512_dpbusd_epi32(s0, lo[1], xb[2]);
          s1 = _mm512_dpbusd_epi32(s1, lo[3], xb[6]);
          s0 = _mm512_dpbusd_epi32(s0, hi[1], xb[3]);
          s1 = _mm512_dpbusd_epi32(s1, hi[3], xb[7]);
          s0 = _mm512_sub_epi32(s0, off0);
          s1 = _mm512_sub_epi32(s1, off1);
          acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s0), _mm512_mul_ps(d0, dx), acc[i]);
          acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s1), _mm512_mul_ps(d1, dx), acc[i]);
        } else {
          const __m512 d0 = _mm512_mul_ps(d[i], bytes_to_ps(g0 + 64 + 16 * jb, false));
          const __m512 d1 = _mm512_mul_ps(dmin[i], bytes_to_ps(g0 + 64 + 128 + 16 * jb, false));
          __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
#pragma GCC unroll 4
          for (int v = 0; v < 4; ++v) {
            s0 = _mm512_dpbusd_epi32(s0, lo[v], xb[2 * v]);
            s1 = _mm512_dpbusd_epi32(s1, hi[v], xb[2 * v + 1]);
          }
          const __m512i isum = kQ5 ? _mm512_add_epi32(s0, s1) : _mm512_add_epi32(s0, _mm512_srai_epi32(s1, 4));
          acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(d0, dx), acc[i]);
          macc[i] = _mm512_fnmadd_ps(d1, cx, macc[i]);
        }
      }
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < R; ++i)
    _mm512_mask_storeu_ps(a.y + r + 16 * i, mask[i], kQ6 ? acc[i] : _mm512_add_ps(acc[i], macc[i]));
}

// Not inlined: one call per 1-4 tiles, and the symbol the CTest decode_kernels_keep_their_
// prefetches finds each kernel by (the kernels below are inlined into it).
template <DType DT, int R>
[[gnu::noinline]] void decode_of(const PackedArgs& a, const uint8_t* tile, int64_t r, const __mmask16* mask) {
  if constexpr (DT == DType::Q8_0) decode_q8<R>(a, tile, r, mask);
  else if constexpr (DT == DType::Q4_K || DT == DType::Q5_K || DT == DType::Q6_K) decode_k<DT, R>(a, tile, r, mask);
  else if constexpr (DT == DType::Q4_0) decode_q4<false, R>(a, tile, r, mask);
  else decode_q4<true, R>(a, tile, r, mask);
}

// Rows [r0, r1) for one token, a.streams tiles at a time (fewer at the end).
template <DType DT>
void decode_rows(const PackedArgs& a, int64_t r0, int64_t r1) {
  for_each_decode_group<kDecodeTiles>(a, r0, r1, [&](const uint8_t* tile, int64_t r, int n, const int* valid) {
    __mmask16 mask[kDecodeTiles];
    for (int i = 0; i < n; ++i) mask[i] = static_cast<__mmask16>((1u << valid[i]) - 1u);
    switch (n) {
      case 4: decode_of<DT, 4>(a, tile, r, mask); break;
      case 3: decode_of<DT, 3>(a, tile, r, mask); break;
      case 2: decode_of<DT, 2>(a, tile, r, mask); break;
      default: decode_of<DT, 1>(a, tile, r, mask); break;
    }
  });
}

template <DType DT>
void packed_rows(const PackedArgs& a, int64_t r0, int64_t r1) {
  if (a.n_tokens == 1) {
    decode_rows<DT>(a, r0, r1);
    return;
  }
  // Token passes of 4, the rest (1-3 tokens) in one pass: a pass unpacks each block once for
  // all its tokens, so 2 or 3 tokens (a small batch step, a verify of 1-2 guesses) no longer
  // cost 2 or 3 single-token passes (k-quants: ~1.5x the time).
  constexpr int kTokens = 4;
  for (int64_t r = r0; r < r1; r += kPackRows) {
    const int64_t n = r1 - r < kPackRows ? r1 - r : kPackRows;
    const __mmask16 mask = static_cast<__mmask16>((1u << n) - 1u);
    const uint8_t* tile = a.w + (r / kPackRows) * a.tile_bytes;
    int64_t t = 0;
    // The first token tile prefetches the next tile of this range (see prefetch_group).
    const uint8_t* pf = r + kPackRows < r1 ? tile + a.tile_bytes : nullptr;
    for (; t + kTokens <= a.n_tokens; t += kTokens, pf = nullptr) tile_tokens_of<DT, kTokens>(a, tile, r, t, mask, pf);
    switch (a.n_tokens - t) {
      case 3: tile_tokens_of<DT, 3>(a, tile, r, t, mask, pf); break;
      case 2: tile_tokens_of<DT, 2>(a, tile, r, t, mask, pf); break;
      case 1: tile_tokens_of<DT, 1>(a, tile, r, t, mask, pf); break;
      default: break;
    }
  }
}

}  // namespace

void packed_rows_avx512vnni(const PackedArgs& a, int64_t r0, int64_t r1) {
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
