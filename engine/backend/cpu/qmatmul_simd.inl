// qmatmul_simd.inl — integer-dot GEMV / GEMM tiles over quantized weights, written once.
//
// Included by qmatmul_avx2.cpp and qmatmul_avx512vnni.cpp inside their own namespace after
// they define `struct V`: kGemvRows (rows of a one-token tile), kRows x kTokens (the tile of
// many-token calls) and dot(u, s), the eight int32 sums of four u8 x s8 products each of two
// 32-byte vectors (maddubs + madd, or vpdpbusd). The includer provides <immintrin.h>,
// <cstdint> and qmatmul_kernels.h.
//
// The weights are read in place: each full block is decoded in registers to the integers
// q of qmatmul_blocks.cpp (partial blocks go through unpack_block, to the same values), and multiplied with the int8 activation block: unsigned q directly, signed q with
// the sign trick (|q| times qx with q's sign, |q| <= 128 and |qx| <= 127, so maddubs cannot
// saturate). The integer lanes are exact; what is summed in float, per output and always in
// this order, is:
//   acc (8 lanes): acc = fma(float(lanes_b) [* d_b], dx_b, acc) for b = 0, 1, ... nb - 1
//   macc:          macc = fma(m_b, c_b, macc)                   in the same b order
//   y = post * ((hsum(acc) + macc) [- z * csum])                 hsum: one fixed tree
// Every (row, token) of a tile has its own accumulators, so the tile shape, the number of
// tokens in the call, the token's index and the row split never change a bit.

constexpr int64_t kQBytes = kQB;


inline float half_at(const uint8_t* p) {
  uint16_t v;
  __builtin_memcpy(&v, p, 2);
  return _cvtsh_ss(v);
}

// 16 bytes of nibbles to 32 values: the bytes broadcast to both 128-bit halves, the upper
// half shifted right by 4 (one variable shift), then masked. Low nibbles are elements 0-15.
inline __m256i nibbles_of_16(const uint8_t* p) {
  const __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_and_si256(_mm256_srlv_epi64(v, _mm256_setr_epi64x(0, 0, 4, 4)), _mm256_set1_epi8(0x0F));
}

// A block's fp16 pair (d, m) as floats, with one conversion.
inline __m128 half_pair(const uint8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm_cvtph_ps(_mm_cvtsi32_si128(v));
}

inline __m256i nibbles_of_32(const uint8_t* p, bool high) {
  __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  if (high) v = _mm256_srli_epi16(v, 4);
  return _mm256_and_si256(v, _mm256_set1_epi8(0x0F));
}

constexpr bool has_scale(DType t) { return t != DType::INT8_ROW && t != DType::INT8_ASYM_ROW; }
constexpr bool has_offset(DType t) {
  return t == DType::Q4_0 || t == DType::Q4_1 || t == DType::INT4_G32 || t == DType::INT4_G128 ||
         t == DType::Q4_K || t == DType::Q5_K;
}

struct WBlock {
  __m256i q;
  __m256 d;   // the scale of each 4-element lane (d_lo in lanes 0-3, d_hi in 4-7)
  float m;
};

// The scales of a k-quant super-block, decoded once when its first block is (decode with
// b % 8 == 0) and read by its eight blocks: no per-block bit fiddling or fp16 conversion.
struct KScales {
  float d[16];   // Q4_K/Q5_K: d * sc[j] for block j; Q6_K: d * sc[i] for each 16 elements
  float m[8];    // Q4_K/Q5_K: -(dmin * mn[j])
};

// Eight 6-bit scales and eight 6-bit mins from the 12 packed bytes at src + 4 (layout as in
// k4_scale_min, tensor.cpp), all at once in three 32-bit words: scales 0-3 and mins 0-3 are
// the low 6 bits of bytes 0-3 / 4-7; scales 4-7 and mins 4-7 take the low / high nibbles of
// bytes 8-11 and the top 2 bits of bytes 0-3 / 4-7. The products equal unpack_block's.
inline void k_scales_q45(const uint8_t* src, KScales* ks) {
  uint32_t w0, w1, w2;
  __builtin_memcpy(&w0, src + 4, 4);
  __builtin_memcpy(&w1, src + 8, 4);
  __builtin_memcpy(&w2, src + 12, 4);
  const uint64_t sc = uint64_t{w0 & 0x3F3F3F3Fu} |
                      uint64_t{(w2 & 0x0F0F0F0Fu) | (((w0 >> 6) & 0x03030303u) << 4)} << 32;
  const uint64_t mn = uint64_t{w1 & 0x3F3F3F3Fu} |
                      uint64_t{((w2 >> 4) & 0x0F0F0F0Fu) | (((w1 >> 6) & 0x03030303u) << 4)} << 32;
  const __m128 dm = half_pair(src);
  const __m256 fs = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(sc))));
  const __m256 fm = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(mn))));
  _mm256_storeu_ps(ks->d, _mm256_mul_ps(_mm256_broadcastss_ps(dm), fs));
  const __m256 mins = _mm256_mul_ps(_mm256_broadcastss_ps(_mm_movehdup_ps(dm)), fm);
  _mm256_storeu_ps(ks->m, _mm256_xor_ps(mins, _mm256_set1_ps(-0.0f)));   // exact negation
}

// Sixteen int8 scales at src + 192 times the fp16 d at src + 208.
inline void k_scales_q6(const uint8_t* src, KScales* ks) {
  const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 192));
  const __m256 d = _mm256_set1_ps(half_at(src + 208));
  _mm256_storeu_ps(ks->d, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc))));
  _mm256_storeu_ps(ks->d + 8, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc, 8)))));
}

// Full block b of a row, decoded in registers to the values unpack_block gives. Blocks of a
// k-quant super-block are decoded in order from its first, which fills *ks.
template <DType DT>
inline void decode(const uint8_t* row, int64_t b, WBlock* w, KScales* ks) {
  if constexpr (DT == DType::INT8_ROW) {
    w->q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 4 + b * kQBytes));
  } else if constexpr (DT == DType::INT8_ASYM_ROW) {
    w->q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 8 + b * kQBytes));
  } else if constexpr (DT == DType::Q8_0) {
    const uint8_t* src = row + b * (2 + kQBytes);
    w->q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2));
    w->d = _mm256_set1_ps(half_at(src));
  } else if constexpr (DT == DType::Q4_0) {
    const uint8_t* src = row + b * (2 + kQBytes / 2);
    w->q = nibbles_of_16(src + 2);
    const float d = half_at(src);
    w->d = _mm256_set1_ps(d);
    w->m = -8.0f * d;
  } else if constexpr (DT == DType::Q4_1 || DT == DType::INT4_G32) {
    const uint8_t* src = row + b * (4 + kQBytes / 2);
    w->q = nibbles_of_16(src + 4);
    const __m128 dm = half_pair(src);
    w->d = _mm256_broadcastss_ps(dm);
    w->m = _mm_cvtss_f32(_mm_movehdup_ps(dm));
  } else if constexpr (DT == DType::INT4_G128) {
    const int s = static_cast<int>(b & 3);
    const uint8_t* src = row + (b >> 2) * (4 + 64);
    w->q = nibbles_of_32(src + 4 + 32 * (s & 1), s >= 2);
    const __m128 dm = half_pair(src);
    w->d = _mm256_broadcastss_ps(dm);
    w->m = _mm_cvtss_f32(_mm_movehdup_ps(dm));
  } else if constexpr (DT == DType::Q4_K || DT == DType::Q5_K) {
    constexpr bool five = DT == DType::Q5_K;
    const int j = static_cast<int>(b & 7);
    const uint8_t* src = row + (b >> 3) * (five ? 176 : 144);
    if (j == 0) k_scales_q45(src, ks);
    const uint8_t* qs = src + (five ? 48 : 16) + 32 * (j >> 1);
    __m256i q = nibbles_of_32(qs, (j & 1) != 0);
    if constexpr (five) {
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 16));
      const __m256i bit = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(j)), _mm256_set1_epi8(1));
      q = _mm256_or_si256(q, _mm256_slli_epi16(bit, 4));
    }
    w->q = q;
    w->d = _mm256_set1_ps(ks->d[j]);
    w->m = ks->m[j];
  } else if constexpr (DT == DType::Q6_K) {
    // Block j of the super-block: half n = j / 4 (128 elements), quarter k = j % 4. Low 4
    // bits from the low (k < 2) or high nibbles of ql[64 n + 32 (k & 1) ...], top 2 bits
    // from qh[32 n ...] >> 2 k, minus 32; scales 2 j and 2 j + 1 for the two halves.
    const int j = static_cast<int>(b & 7), n = j >> 2, k = j & 3;
    const uint8_t* src = row + (b >> 3) * 210;
    if (j == 0) k_scales_q6(src, ks);
    const __m256i lo = nibbles_of_32(src + 64 * n + 32 * (k & 1), (k & 2) != 0);
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 128 + 32 * n));
    const __m256i hi = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * k)), _mm256_set1_epi8(3));
    w->q = _mm256_sub_epi8(_mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)), _mm256_set1_epi8(32));
    w->d = _mm256_set_m128(_mm_broadcast_ss(&ks->d[2 * j + 1]), _mm_broadcast_ss(&ks->d[2 * j]));
  }
}

template <DType DT>
inline void unpacked(const uint8_t* row, int64_t cols, int64_t b, WBlock* w) {
  QBlock qb;
  unpack_block(DT, row, cols, b, &qb);
  w->q = _mm256_load_si256(reinterpret_cast<const __m256i*>(qb.q));
  w->d = _mm256_setr_ps(qb.d_lo, qb.d_lo, qb.d_lo, qb.d_lo, qb.d_hi, qb.d_hi, qb.d_hi, qb.d_hi);
  w->m = qb.m;
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Outputs of rows [r, r + RR) x tokens [t0, t0 + TT).
template <DType DT, int RR, int TT>
inline void tile1(const QArgs& a, int64_t nfull, int64_t r, int64_t t0) {
  const uint8_t* row[RR];
#pragma GCC unroll 8
  for (int i = 0; i < RR; ++i) row[i] = a.w + (r + i) * static_cast<int64_t>(a.w_row_bytes);
  __m256 acc[RR][TT];
  float macc[RR][TT];
#pragma GCC unroll 8
  for (int i = 0; i < RR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < TT; ++j) {
      acc[i][j] = _mm256_setzero_ps();
      macc[i][j] = 0.0f;
    }
  const int8_t* xq[TT];
  const float* xd[TT];
  const float* xc[TT];
#pragma GCC unroll 8
  for (int j = 0; j < TT; ++j) {
    xq[j] = a.x.q + (t0 + j) * a.x.q_stride;
    xd[j] = a.x.d + (t0 + j) * a.nb;
    xc[j] = a.x.c + (t0 + j) * a.nb;
  }

  auto accumulate = [&](int64_t b, const WBlock* w) {
    __m256i u[RR];
#pragma GCC unroll 8
    for (int i = 0; i < RR; ++i) u[i] = weights_signed(DT) ? _mm256_abs_epi8(w[i].q) : w[i].q;
#pragma GCC unroll 8
    for (int j = 0; j < TT; ++j) {
      const __m256i x = _mm256_load_si256(reinterpret_cast<const __m256i*>(xq[j] + b * kQBytes));
      const __m256 dx = _mm256_set1_ps(xd[j][b]);
#pragma GCC unroll 8
      for (int i = 0; i < RR; ++i) {
        const __m256i s = weights_signed(DT) ? _mm256_sign_epi8(x, w[i].q) : x;
        __m256 f = _mm256_cvtepi32_ps(V::dot(u[i], s));
        if constexpr (has_scale(DT)) f = _mm256_mul_ps(f, w[i].d);
        acc[i][j] = _mm256_fmadd_ps(f, dx, acc[i][j]);
        if constexpr (has_offset(DT)) macc[i][j] = __builtin_fmaf(w[i].m, xc[j][b], macc[i][j]);
      }
    }
  };

  WBlock w[RR] = {};   // fields a dtype does not use stay zero
  KScales ks[RR];
  // Software prefetch of the same block in the rows of the next tile (RR rows further on):
  // the decode does enough work per byte that the hardware prefetchers alone leave DRAM
  // latency exposed, and a row (1-2 KB) is too short for a fixed distance within it.
  const int64_t bytes_per_block = static_cast<int64_t>(a.w_row_bytes) / a.nb;
  const int64_t ahead = RR * static_cast<int64_t>(a.w_row_bytes);
  for (int64_t b = 0; b < nfull; ++b) {
#pragma GCC unroll 8
    for (int i = 0; i < RR; ++i) {
      prefetch_t0(row[i] + ahead + b * bytes_per_block);
      decode<DT>(row[i], b, &w[i], &ks[i]);
    }
    accumulate(b, w);
  }
  for (int64_t b = nfull; b < a.nb; ++b) {
#pragma GCC unroll 8
    for (int i = 0; i < RR; ++i) unpacked<DT>(row[i], a.cols, b, &w[i]);
    accumulate(b, w);
  }

#pragma GCC unroll 8
  for (int i = 0; i < RR; ++i) {
    float post, z;
    row_params(DT, row[i], &post, &z);
#pragma GCC unroll 8
    for (int j = 0; j < TT; ++j) {
      float v = hsum(acc[i][j]) + macc[i][j];
      if constexpr (DT == DType::INT8_ASYM_ROW) v = v - z * a.x.csum[t0 + j];
      a.y[(t0 + j) * a.y_stride + r + i] = post * v;
    }
  }
}

#ifdef __AVX512F__
// tile1 with two rows per zmm: row 2p's block in lanes 0-7, row 2p + 1's in lanes 8-15, so
// one vpdpbusd / convert / multiply / fma serves two rows. Each row's 8 lanes go through
// exactly the operations of tile1 (the sign trick becomes a masked negation of x: the same
// integers), so the two give bitwise the same outputs and may be mixed freely.
template <DType DT, int RR, int TT>
inline void tile_row_pairs(const QArgs& a, int64_t nfull, int64_t r, int64_t t0) {
  constexpr int P = RR / 2;
  const uint8_t* row[RR];
#pragma GCC unroll 8
  for (int i = 0; i < RR; ++i) row[i] = a.w + (r + i) * static_cast<int64_t>(a.w_row_bytes);
  __m512 acc[P][TT];
  float macc[RR][TT];
#pragma GCC unroll 8
  for (int j = 0; j < TT; ++j) {
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) acc[p][j] = _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int i = 0; i < RR; ++i) macc[i][j] = 0.0f;
  }
  const int8_t* xq[TT];
  const float* xd[TT];
  const float* xc[TT];
#pragma GCC unroll 8
  for (int j = 0; j < TT; ++j) {
    xq[j] = a.x.q + (t0 + j) * a.x.q_stride;
    xd[j] = a.x.d + (t0 + j) * a.nb;
    xc[j] = a.x.c + (t0 + j) * a.nb;
  }

  auto accumulate = [&](int64_t b, const WBlock* w) {
    __m512i u[P];
    __mmask64 neg[P];
    __m512 d[P];
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) {
      const __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(w[2 * p].q), w[2 * p + 1].q, 1);
      if constexpr (has_scale(DT)) d[p] = _mm512_insertf32x8(_mm512_castps256_ps512(w[2 * p].d), w[2 * p + 1].d, 1);
      if constexpr (weights_signed(DT)) {
        neg[p] = _mm512_movepi8_mask(q);
        u[p] = _mm512_abs_epi8(q);
      } else {
        u[p] = q;
      }
    }
#pragma GCC unroll 8
    for (int j = 0; j < TT; ++j) {
      const __m512i x =
          _mm512_broadcast_i64x4(_mm256_load_si256(reinterpret_cast<const __m256i*>(xq[j] + b * kQBytes)));
      const __m512 dx = _mm512_set1_ps(xd[j][b]);
#pragma GCC unroll 8
      for (int p = 0; p < P; ++p) {
        __m512i sx = x;
        if constexpr (weights_signed(DT)) sx = _mm512_mask_sub_epi8(x, neg[p], _mm512_setzero_si512(), x);
        __m512 f = _mm512_cvtepi32_ps(V::dot512(u[p], sx));
        if constexpr (has_scale(DT)) f = _mm512_mul_ps(f, d[p]);
        acc[p][j] = _mm512_fmadd_ps(f, dx, acc[p][j]);
      }
      if constexpr (has_offset(DT)) {
#pragma GCC unroll 8
        for (int i = 0; i < RR; ++i) macc[i][j] = __builtin_fmaf(w[i].m, xc[j][b], macc[i][j]);
      }
    }
  };

  WBlock w[RR] = {};
  KScales ks[RR];
  const int64_t bytes_per_block = static_cast<int64_t>(a.w_row_bytes) / a.nb;
  const int64_t ahead = RR * static_cast<int64_t>(a.w_row_bytes);
  for (int64_t b = 0; b < nfull; ++b) {
#pragma GCC unroll 8
    for (int i = 0; i < RR; ++i) {
      prefetch_t0(row[i] + ahead + b * bytes_per_block);
      decode<DT>(row[i], b, &w[i], &ks[i]);
    }
    accumulate(b, w);
  }
  for (int64_t b = nfull; b < a.nb; ++b) {
#pragma GCC unroll 8
    for (int i = 0; i < RR; ++i) unpacked<DT>(row[i], a.cols, b, &w[i]);
    accumulate(b, w);
  }

#pragma GCC unroll 8
  for (int i = 0; i < RR; ++i) {
    float post, z;
    row_params(DT, row[i], &post, &z);
#pragma GCC unroll 8
    for (int j = 0; j < TT; ++j) {
      const __m512 v2 = acc[i / 2][j];
      const __m256 half = (i & 1) ? _mm512_extractf32x8_ps(v2, 1) : _mm512_castps512_ps256(v2);
      float v = hsum(half) + macc[i][j];
      if constexpr (DT == DType::INT8_ASYM_ROW) v = v - z * a.x.csum[t0 + j];
      a.y[(t0 + j) * a.y_stride + r + i] = post * v;
    }
  }
}
#endif

template <DType DT, int RR, int TT>
inline void tile(const QArgs& a, int64_t nfull, int64_t r, int64_t t0) {
#ifdef __AVX512F__
  // Pairs only pay in many-token tiles: for decode the extra inserts compete for the shuffle
  // port with the block decode (measured: INT4_G32 decode 25% slower, prefill 10-25% faster).
  if constexpr (V::kRowPairs && RR % 2 == 0 && TT > 1) {
    tile_row_pairs<DT, RR, TT>(a, nfull, r, t0);
    return;
  }
#endif
  tile1<DT, RR, TT>(a, nfull, r, t0);
}

template <DType DT>
void rows_of(const QArgs& a, int64_t r0, int64_t r1) {
  const int64_t T = a.n_tokens, nfull = full_blocks(DT, a.cols);
  if (T < V::kTokens) {
    // Decode: a few rows streamed once per token, kGemvRows at a time.
    int64_t r = r0;
    for (; r + V::kGemvRows <= r1; r += V::kGemvRows)
      for (int64_t t = 0; t < T; ++t) tile<DT, V::kGemvRows, 1>(a, nfull, r, t);
    for (; r < r1; ++r)
      for (int64_t t = 0; t < T; ++t) tile<DT, 1, 1>(a, nfull, r, t);
    return;
  }
  // Prefill: a tile's weight rows stay in L1 while every token tile passes over them.
  int64_t r = r0;
  for (; r + V::kRows <= r1; r += V::kRows) {
    int64_t t = 0;
    for (; t + V::kTokens <= T; t += V::kTokens) tile<DT, V::kRows, V::kTokens>(a, nfull, r, t);
    for (; t < T; ++t) tile<DT, V::kRows, 1>(a, nfull, r, t);
  }
  for (; r < r1; ++r) {
    int64_t t = 0;
    for (; t + V::kTokens <= T; t += V::kTokens) tile<DT, 1, V::kTokens>(a, nfull, r, t);
    for (; t < T; ++t) tile<DT, 1, 1>(a, nfull, r, t);
  }
}

inline void rows(const QArgs& a, int64_t r0, int64_t r1) {
  switch (a.dtype) {
    case DType::INT8_ROW: rows_of<DType::INT8_ROW>(a, r0, r1); return;
    case DType::INT8_ASYM_ROW: rows_of<DType::INT8_ASYM_ROW>(a, r0, r1); return;
    case DType::INT4_G32: rows_of<DType::INT4_G32>(a, r0, r1); return;
    case DType::Q8_0: rows_of<DType::Q8_0>(a, r0, r1); return;
    case DType::Q4_0: rows_of<DType::Q4_0>(a, r0, r1); return;
    case DType::Q4_1: rows_of<DType::Q4_1>(a, r0, r1); return;
    case DType::INT4_G128: rows_of<DType::INT4_G128>(a, r0, r1); return;
    case DType::Q6_K: rows_of<DType::Q6_K>(a, r0, r1); return;
    case DType::Q4_K: rows_of<DType::Q4_K>(a, r0, r1); return;
    case DType::Q5_K: rows_of<DType::Q5_K>(a, r0, r1); return;
    default: return;   // not qtype(): never called
  }
}
