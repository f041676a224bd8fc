// matmul_simd.inl — the GEMV and blocked GEMM kernels, written once for any vector width.
//
// Included by matmul_avx2.cpp and matmul_avx512.cpp *inside* their own namespace
// (llmwb::cpu::kernels::avx2 / ::avx512) after they define `struct V`, the vector primitives
// of their instruction set (see either file for the list). Every function here therefore has
// a distinct name per instruction set, so no AVX-512 copy can stand in for the AVX2 one.
// The includer provides <immintrin.h>, <cstdint> and matmul_kernels.h.
//
// One summation order for every output, whatever the batch (batch invariance, as in
// Thinking Machines, "Defeating Nondeterminism in LLM Inference", 2025): y[t][o] is the dot
// product of weight row o and token t computed by dot_tile alone, as the llama.cpp vec_dot
// kernels do it: W lane accumulators run along k, lane l summing the products of columns
// l, l + W, l + 2W, ... in increasing k with one fused multiply-add each; then one fixed
// horizontal tree (V::hsum) reduces the lanes; then the K % W tail columns are added one by
// one with fused multiply-adds. Every accumulator of a register tile is independent of the
// others, so the tile shape (RR rows x TT tokens), the number of tokens in the call, the
// token's index and the row split between threads cannot change a single bit. Weights are
// decoded to exactly the same floats in registers (gemv) and in the scratch tile (gemm).
//
// GEMV (decode, few tokens): tiles of kGemvRows rows x kGemvTokens tokens read the weights in
// place, each weight vector decoded once and used for every token of the tile. Memory-bound.
// A tile streams RR rows at once, each only a page or two long (an f16 row of 2048 columns is
// exactly one 4 KiB page), and the hardware prefetchers stop at page boundaries, so every row
// would start with cold misses; while a tile runs, its first token tile therefore prefetches
// the next tile's rows into L2 at the same offsets (one tile ahead: 16-90 KiB on tinyllama,
// far above the latency-bandwidth product, far below L2). Measured on the Xeon here (one
// thread, 2048x5632 f16): 12.5 -> 14.9 GB/s best, 11.4 -> 12.8 GB/s median; two tiles ahead
// or an L1 hint was no better, 8-row tiles no better than 4.
//
// GEMM (prefill): the same sums, register tiles of kGemmRows x kGemmTokens, blocked for the
// caches (the GotoBLAS scheme, with lanes along k instead of along the output). x is packed
// once per call by token tile and k-step (pack_x); a thread packs its rows a block at a time
// (gemm_block_rows, f32 interleaved by k-step, decoded from f16/bf16 exactly as gemv
// decodes them) and sweeps every token tile over the block in k-chunks of at most kGemmKc
// columns, keeping each tile's lane sums in L1 between chunks (chunk_tile) and reducing them
// at the end (finish_tile); x chunks are prefetched from L3 one chunk ahead. Storing and
// reloading a lane sum is exact, so the chunking is invisible in the result. Per k-step a
// tile loads RR + TT vectors for RR * TT fused multiply-adds.

using reg = typename V::reg;
constexpr int W = V::W;

constexpr int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
constexpr int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

inline uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  __builtin_memcpy(&v, p, 2);
  return v;
}

// IEEE half to float with the F16C instruction both includers enable: the exact conversion
// fp16_to_fp32 does, inline on the decode path.
inline float half_to_float(const uint8_t* p) { return _cvtsh_ss(load_u16(p)); }

// One weight element, for the column tails that do not fill a vector.
template <DType DT>
inline float weight_at(const uint8_t* row, int64_t k) {
  if constexpr (DT == DType::F32) {
    float f;
    __builtin_memcpy(&f, row + 4 * k, 4);
    return f;
  } else if constexpr (DT == DType::F16) {
    return half_to_float(row + 2 * k);
  } else {
    return bf16_to_fp32(load_u16(row + 2 * k));
  }
}

// W consecutive weights of a float-type row, starting at element k.
template <DType DT>
inline reg load_weights(const uint8_t* row, int64_t k) {
  if constexpr (DT == DType::F32) {
    return V::load(reinterpret_cast<const float*>(row + 4 * k));
  } else if constexpr (DT == DType::F16) {
    return V::load_f16(row + 2 * k);
  } else {
    return V::load_bf16(row + 2 * k);
  }
}

// Columns summed in lanes; the tail [lane_cols, K) is added one column at a time.
template <DType DT>
constexpr int64_t lane_cols(int64_t K) {
  return K / W * W;
}

// ---------------------------------------------------------------------- the dot-product tile

// y[j * ys + i] = row wr[i] . token xt[j] for i < RR, j < TT, in the order stated at the top.
// If pf is set (float weights only), the rows pf + i * rb, i < RR, are prefetched into L2
// alongside, at the same column offsets as wr[i] (the gemv's next tile; see the top).
template <DType DT, int RR, int TT>
inline void dot_tile(const uint8_t* const* wr, const float* const* xt, int64_t K, float* y, int64_t ys,
                     const uint8_t* pf, int64_t rb) {
  reg acc[RR][TT];
#pragma GCC unroll 16
  for (int i = 0; i < RR; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < TT; ++j) acc[i][j] = V::zero();

  int64_t k = 0;
  {
    constexpr int64_t eb = DT == DType::F32 ? 4 : 2;   // bytes per weight
    for (; k + W <= K; k += W) {
      if (pf != nullptr && ((k * eb) & 63) == 0) {   // once per cache line of each row
#pragma GCC unroll 16
        for (int i = 0; i < RR; ++i) prefetch_t1(pf + i * rb + k * eb);
      }
      reg xv[TT];
#pragma GCC unroll 16
      for (int j = 0; j < TT; ++j) xv[j] = V::load(xt[j] + k);
#pragma GCC unroll 16
      for (int i = 0; i < RR; ++i) {
        const reg w = load_weights<DT>(wr[i], k);
#pragma GCC unroll 16
        for (int j = 0; j < TT; ++j) acc[i][j] = V::fma(w, xv[j], acc[i][j]);
      }
    }
  }

  float res[RR][TT];
#pragma GCC unroll 16
  for (int i = 0; i < RR; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < TT; ++j) res[i][j] = V::hsum(acc[i][j]);
  for (; k < K; ++k) {
    for (int i = 0; i < RR; ++i) {
      const float w = weight_at<DT>(wr[i], k);
      for (int j = 0; j < TT; ++j) res[i][j] = __builtin_fmaf(w, xt[j][k], res[i][j]);
    }
  }
  for (int j = 0; j < TT; ++j)
    for (int i = 0; i < RR; ++i) y[j * ys + i] = res[i][j];
}

// A tile of rr <= RR rows and tt <= TT tokens, for the edges of the gemm's loops.
using TileFn = void (*)(const uint8_t* const* wr, const float* const* xt, int64_t K, float* y, int64_t ys,
                        const uint8_t* pf, int64_t rb);

template <DType DT, int RR, int TT>
TileFn pick_tile(int rr, int tt) {
  if constexpr (RR == 0 || TT == 0) {
    return nullptr;
  } else {
    if (rr == RR && tt == TT) return &dot_tile<DT, RR, TT>;
    if (tt == TT) return pick_tile<DT, RR - 1, TT>(rr, tt);
    return pick_tile<DT, RR, TT - 1>(rr, tt);
  }
}

// ---------------------------------------------------------------------------------- GEMV

// Rows [r, r + RR) for every token; the first token tile prefetches rows from pf on (or none).
template <DType DT, int RR>
inline void gemv_rows(const MatmulArgs& a, int64_t r, const uint8_t* pf) {
  constexpr int TT = V::kGemvTokens;
  const int64_t K = a.cols, T = a.n_tokens, ys = a.y_stride, rb = static_cast<int64_t>(a.w_row_bytes);
  const uint8_t* wr[RR];
  for (int i = 0; i < RR; ++i) wr[i] = a.w + (r + i) * a.w_row_bytes;
  const float* xt[TT];
  int64_t t = 0;
  for (; t + TT <= T; t += TT) {
    for (int j = 0; j < TT; ++j) xt[j] = a.x + (t + j) * K;
    dot_tile<DT, RR, TT>(wr, xt, K, a.y + t * ys + r, ys, t == 0 ? pf : nullptr, rb);
  }
  if (t < T) {
    const int tt = static_cast<int>(T - t);
    for (int j = 0; j < tt; ++j) xt[j] = a.x + (t + j) * K;
    pick_tile<DT, RR, TT - 1>(RR, tt)(wr, xt, K, a.y + t * ys + r, ys, t == 0 ? pf : nullptr, rb);
  }
}

template <DType DT>
void gemv_dt(const MatmulArgs& a, int64_t r0, int64_t r1) {
  constexpr int RR = V::kGemvRows;
  int64_t r = r0;
  for (; r + RR <= r1; r += RR) {
    // The next full tile of this thread's range, if any (the rest is another thread's).
    const uint8_t* next = r + 2 * RR <= r1 ? a.w + (r + RR) * a.w_row_bytes : nullptr;
    gemv_rows<DT, RR>(a, r, next);
  }
  for (; r < r1; ++r) gemv_rows<DT, 1>(a, r, nullptr);
}

// ---------------------------------------------------------------------------------- GEMM

// Packs rr <= RR weight rows, columns [0, kv), as floats interleaved by k-step:
// wp[s][i][l] = w[i][s * W + l], so that a tile reads its weights as one sequential stream.
// The values are exactly those load_weights gives dot_tile.
template <DType DT>
inline void pack_tile(const uint8_t* const* wr, int rr, int64_t kv, float* wp) {
  constexpr int RR = V::kGemmRows;
  for (int i = 0; i < rr; ++i) {
    for (int64_t k = 0; k < kv; k += W) V::store(wp + k * RR + i * W, load_weights<DT>(wr[i], k));
  }
}

// Whole cache lines (16 floats).
constexpr int64_t round_up(int64_t n) { return (n + 15) / 16 * 16; }
inline float* align_up(float* p) {
  return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(p) + 63) & ~uintptr_t{63});
}

// Lane sums of the register tiles of `rows` rows, whole cache lines.
constexpr int64_t acc_floats(int64_t rows) {
  return round_up((rows + V::kGemmRows - 1) / V::kGemmRows * V::kGemmRows * V::kGemmTokens * W);
}

constexpr int64_t block_rows(int64_t K) {
  return imin(V::kGemmBlockRows, gemm_block_rows(V::kGemmBlockFloats, V::kGemmRows, K));
}

// The k-chunk width for kv lane columns: kv split into the fewest chunks of at most kGemmKc
// columns, as even as whole vectors allow (5632 -> 5 x 944 + 912, not 5 x 1024 + 512), so
// that every chunk's x prefetch (gemm_dt) covers the next chunk. Where the chunks end does not
// change a bit of the result (chunk_tile).
constexpr int64_t chunk_cols(int64_t kv) {
  const int64_t n = imax(1, (kv + V::kGemmKc - 1) / V::kGemmKc);
  return imax(W, ((kv + n - 1) / n + W - 1) / W * W);
}

// Lane accumulators of one gemm tile (rr <= RR rows x tt <= TT tokens) over f32 columns
// [k0, k1), continued from `acc` (vector (i, j) at acc + (i * kGemmTokens + j) * W) or
// from zero when `first`. Storing and reloading a vector is exact, so splitting K into
// chunks leaves every lane's sum exactly the one dot_tile forms in registers.
// Alongside, the first pfx_bytes / 64 k-steps each prefetch one line from pfx into L2 (a
// slice of the next x chunk, see gemm_dt): one per step keeps the line fill buffers free for
// the tile's own loads.
template <int RR, int TT>
void chunk_tile(const float* wp, const float* xb, int64_t k0, int64_t k1, float* acc, bool first, const char* pfx,
                int64_t pfx_bytes) {
  constexpr int LT = V::kGemmTokens, LR = V::kGemmRows;
  reg s[RR][TT];
#pragma GCC unroll 16
  for (int i = 0; i < RR; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < TT; ++j) s[i][j] = first ? V::zero() : V::load(acc + (i * LT + j) * W);
  int64_t pfo = 0;
  for (int64_t k = k0; k < k1; k += W, xb += LT * W) {
    if (pfo < pfx_bytes) {
      prefetch_t1(pfx + pfo);
      pfo += 64;
    }
    // Hold the shorter side of the tile in registers, stream the longer one.
    if constexpr (TT <= RR) {
      reg xv[TT];
#pragma GCC unroll 16
      for (int j = 0; j < TT; ++j) xv[j] = V::load(xb + j * W);
#pragma GCC unroll 16
      for (int i = 0; i < RR; ++i) {
        const reg w = V::load(wp + k * LR + i * W);
#pragma GCC unroll 16
        for (int j = 0; j < TT; ++j) s[i][j] = V::fma(w, xv[j], s[i][j]);
      }
    } else {
      reg wv[RR];
#pragma GCC unroll 16
      for (int i = 0; i < RR; ++i) wv[i] = V::load(wp + k * LR + i * W);
#pragma GCC unroll 16
      for (int j = 0; j < TT; ++j) {
        const reg xj = V::load(xb + j * W);
#pragma GCC unroll 16
        for (int i = 0; i < RR; ++i) s[i][j] = V::fma(wv[i], xj, s[i][j]);
      }
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < RR; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < TT; ++j) V::store(acc + (i * LT + j) * W, s[i][j]);
}

using ChunkFn = void (*)(const float* wp, const float* xb, int64_t k0, int64_t k1, float* acc, bool first,
                         const char* pfx, int64_t pfx_bytes);

template <int RR, int TT>
ChunkFn pick_chunk(int rr, int tt) {
  if constexpr (RR == 0 || TT == 0) {
    return nullptr;
  } else {
    if (rr == RR && tt == TT) return &chunk_tile<RR, TT>;
    if (tt == TT) return pick_chunk<RR - 1, TT>(rr, tt);
    return pick_chunk<RR, TT - 1>(rr, tt);
  }
}

// The end of dot_tile for a gemm tile: the same horizontal tree, then the tail columns
// [kv, K) one fused multiply-add at a time, read from the weight rows in place.
// A whole tile's vectors are reduced together by V::hsum_n (bitwise V::hsum, faster).
template <DType DT>
inline void finish_tile(const uint8_t* const* wr, const float* const* xt, int rr, int tt, int64_t kv, int64_t K,
                        const float* acc, float* y, int64_t ys) {
  constexpr int LT = V::kGemmTokens, LR = V::kGemmRows;
  float sums[LR * LT];
  const bool whole = rr == LR && tt == LT;
  if (whole) V::hsum_n(acc, LR * LT, sums);
  for (int i = 0; i < rr; ++i) {
    for (int j = 0; j < tt; ++j) {
      float r = whole ? sums[i * LT + j] : V::hsum(V::load(acc + (i * LT + j) * W));
      for (int64_t k = kv; k < K; ++k) r = __builtin_fmaf(weight_at<DT>(wr[i], k), xt[j][k], r);
      y[j * ys + i] = r;
    }
  }
}

// The prefetches of one gemm token tile, issued a few before each chunk_tile call instead of
// in one burst at the start of the tile: a burst stalled on the line fill buffers and page
// walks (perf: the instructions after the bursts collected ~3 % of an f32 prefill).
// First the y lines (ny rows of ybytes from y[i], the last line by its last byte, for rows
// that do not start on a line), then the weight bytes [woff, wend) from w, 64 at a time.
struct SpreadPrefetch {
  const char* y[V::kGemmTokens] = {};
  int ny = 0, yi = 0;
  int64_t ybytes = 0, yoff = 0;
  const char* w = nullptr;
  int64_t woff = 0, wend = 0;
  int64_t per_call = 0;

  void spread(int64_t calls) {
    const int64_t lines = ny * ((ybytes + 126) / 64) + (wend > woff ? (wend - woff + 63) / 64 : 0);
    per_call = (lines + calls - 1) / calls;
  }
  void issue() {
    for (int64_t n = per_call; n > 0; --n) {
      if (yi < ny) {
        prefetch_t0(y[yi] + imin(yoff, ybytes - 1));
        yoff += 64;
        if (yoff >= ybytes + 63) {
          yoff = 0;
          ++yi;
        }
      } else if (woff < wend) {
        prefetch_t1(w + woff);
        woff += 64;
      } else {
        return;
      }
    }
  }
};

// Loop nest (outermost first): row blocks of this thread (packed once, then in L2), token
// tiles (x packed by pack_x, streamed from L3), k-chunks of chunk_cols(kv) <= kGemmKc
// columns, row tiles. One token tile's x chunk (TT x kc floats) and the block's lane
// accumulators stay in L1 while every row tile of the block streams its packed weights from
// L2 over them: per k-step RR loads from L2, TT from L1. While a chunk's row tiles run, they
// prefetch the next x chunk from L3 into L2, a slice each. The last token tiles of a block's
// sweep prefetch the next block's weight rows (this thread's, contiguous in memory) into L2 a
// slice at a time, so that packing it reads L2 instead of waiting on DRAM, and each token
// tile prefetches the y lines the next one will store (both spread over the tile's
// chunk_tile calls).
template <DType DT>
void gemm_dt(const MatmulArgs& a, int64_t r0, int64_t r1, float* scratch) {
  constexpr int RR = V::kGemmRows, TT = V::kGemmTokens;
  constexpr int64_t tile_floats = int64_t{RR} * TT * W;
  const int64_t K = a.cols, T = a.n_tokens, ys = a.y_stride;
  // Columns summed in lanes; [kv, K) is the tail.
  const int64_t kv = lane_cols<DT>(K);
  const int64_t mc = block_rows(K);
  const int64_t kc = chunk_cols(kv);
  // Vectors aligned to cache lines: a load that splits two lines costs two.
  float* wpack = align_up(scratch);           // mc / RR tiles of RR x kv packed weights
  float* acc = wpack + round_up(mc * K);      // mc / RR tiles of lane sums

  const uint8_t* wr[RR];
  const float* xt[TT];
  for (int64_t rb0 = r0; rb0 < r1; rb0 += mc) {
    const int64_t nrows = imin(mc, r1 - rb0);
    for (int64_t r = 0; r < nrows; r += RR) {
      const int rr = static_cast<int>(imin(RR, nrows - r));
      for (int i = 0; i < rr; ++i) wr[i] = a.w + (rb0 + r + i) * a.w_row_bytes;
      pack_tile<DT>(wr, rr, kv, wpack + r * kv);
    }
    // The next block: rows [rb0 + mc, next_end), prefetched in slices of whole lines by the
    // last pf_tiles token tiles only. Each token tile streams its x (TT x kv floats) through
    // L2, so a slice fetched early in the sweep was evicted by the megabytes of x that came
    // after it before the packing got to it (perf on an f32 prefill: the packing's loads
    // waited on memory, ~5 % of the time).
    const int64_t next_end = imin(r1, rb0 + 2 * mc);
    const int64_t next_bytes = next_end > rb0 + mc ? (next_end - rb0 - mc) * static_cast<int64_t>(a.w_row_bytes) : 0;
    const uint8_t* next = a.w + (rb0 + mc) * a.w_row_bytes;
    const int64_t n_tiles = (T + TT - 1) / TT;
    const char* x_end = reinterpret_cast<const char*>(a.xp + n_tiles * kv * TT);
    const int64_t pf_tiles = imax(1, imin(n_tiles, V::kGemmPrefetchXBytes / (TT * kv * 4 + 1)));
    const int64_t pf_first = n_tiles - pf_tiles;
    const int64_t slice = (next_bytes / 64 + pf_tiles - 1) / pf_tiles * 64;
    for (int64_t t0 = 0; t0 < T; t0 += TT) {
      const int tt = static_cast<int>(imin(TT, T - t0));
      for (int j = 0; j < tt; ++j) xt[j] = a.x + (t0 + j) * K;
      // This token tile's prefetches: its slice of the next block (from pf_first on), and the
      // y lines the next token tile will store (this block's columns of them), so that
      // finish_tile's stores do not wait on their lines (perf: they did, ~3 %).
      SpreadPrefetch pf;
      for (int64_t j = t0 + TT, je = imin(T, t0 + 2 * TT); j < je; ++j) {
        pf.y[pf.ny++] = reinterpret_cast<const char*>(a.y + j * ys + rb0);
      }
      pf.ybytes = nrows * 4;
      pf.w = reinterpret_cast<const char*>(next);
      if (t0 / TT >= pf_first) {
        pf.woff = (t0 / TT - pf_first) * slice;
        pf.wend = imin(next_bytes, pf.woff + slice);
      }
      pf.spread(imax(1, (kv + kc - 1) / kc) * ((nrows + RR - 1) / RR));
      const float* xtile = a.xp + t0 / TT * kv * TT;
      for (int64_t k0 = 0; k0 < kv || k0 == 0; k0 += kc) {
        const int64_t k1 = imin(kv, k0 + kc);
        // The next x chunk (x is packed in sweep order, so it starts where this one ends),
        // prefetched into L2 a slice per row tile: the first row tile of every chunk read its
        // x straight from L3 (the whole x of a call, 4-11 MiB at 512 tokens, passes once per
        // row block and does not stay in L2), which left the inner tile at ~65 % of peak FMA
        // in a one-thread tinyllama-layer benchmark; with the prefetch ~75 %.
        const char* nx = reinterpret_cast<const char*>(xtile + k1 * TT);
        const int64_t nx_bytes = imax(0, imin(x_end - nx, (k1 < kv ? imin(kc, kv - k1) : imin(kc, kv)) * TT * 4));
        const int64_t nrt = (nrows + RR - 1) / RR;
        const int64_t nx_slice = (nx_bytes / 64 + nrt - 1) / nrt * 64;
        for (int64_t r = 0; r < nrows; r += RR) {
          const int rr = static_cast<int>(imin(RR, nrows - r));
          float* tacc = acc + r / RR * tile_floats;
          pf.issue();
          const int64_t so = r / RR * nx_slice;
          const int64_t pb = imax(0, imin(nx_slice, nx_bytes - so));
          const char* px = pb > 0 ? nx + so : nullptr;   // never an address past x's end
          if (rr == RR && tt == TT) {
            chunk_tile<RR, TT>(wpack + r * kv, xtile + k0 * TT, k0, k1, tacc, k0 == 0, px, pb);
          } else {
            pick_chunk<RR, TT>(rr, tt)(wpack + r * kv, xtile + k0 * TT, k0, k1, tacc, k0 == 0, px, pb);
          }
        }
      }
      for (int64_t r = 0; r < nrows; r += RR) {
        const int rr = static_cast<int>(imin(RR, nrows - r));
        for (int i = 0; i < rr; ++i) wr[i] = a.w + (rb0 + r + i) * a.w_row_bytes;
        finish_tile<DT>(wr, xt, rr, tt, kv, K, acc + r / RR * tile_floats, a.y + t0 * ys + rb0 + r, ys);
      }
    }
  }
}

// Scratch one thread needs for gemm() with K = cols.
inline int64_t gemm_scratch_floats(int64_t cols) {
  return 16 + round_up(block_rows(cols) * cols) + acc_floats(block_rows(cols));
}

// x packed by token tile and k-step, xp[tile][s][j][l] = x[tile * TT + j][s * W + l], so that
// each k-chunk of a token tile is one aligned sequential stream for the prefetchers. The
// lanes of tokens past the end are left unset: the edge tiles never read them.
inline int64_t gemm_xp_floats(int64_t n_tokens, int64_t cols) {
  return (n_tokens + V::kGemmTokens - 1) / V::kGemmTokens * V::kGemmTokens * cols;
}

inline void pack_x(const MatmulArgs& a, int64_t tile0, int64_t tile1, float* xp) {
  constexpr int TT = V::kGemmTokens;
  const int64_t K = a.cols;
  const int64_t kv = K / W * W;   // as lane_cols
  for (int64_t p = tile0; p < tile1; ++p) {
    float* dst = xp + p * kv * TT;
    const int tt = static_cast<int>(imin(TT, a.n_tokens - p * TT));
    for (int j = 0; j < tt; ++j) {
      const float* src = a.x + (p * TT + j) * K;
      for (int64_t k = 0; k < kv; k += W) V::store(dst + k * TT + j * W, V::load(src + k));
    }
  }
}

// ---------------------------------------------------------------------------- dispatch

inline bool handles(DType dt) {
  switch (dt) {
    case DType::F32:
    case DType::F16:
    case DType::BF16: return true;
    default: return false;   // quantized types: qmatmul
  }
}

inline void gemv(const MatmulArgs& a, int64_t r0, int64_t r1) {
  switch (a.dtype) {
    case DType::F32: gemv_dt<DType::F32>(a, r0, r1); return;
    case DType::F16: gemv_dt<DType::F16>(a, r0, r1); return;
    case DType::BF16: gemv_dt<DType::BF16>(a, r0, r1); return;
    default: return;   // not handles(): never called
  }
}

inline void gemm(const MatmulArgs& a, int64_t r0, int64_t r1, float* scratch) {
  switch (a.dtype) {
    case DType::F32: gemm_dt<DType::F32>(a, r0, r1, scratch); return;
    case DType::F16: gemm_dt<DType::F16>(a, r0, r1, scratch); return;
    case DType::BF16: gemm_dt<DType::BF16>(a, r0, r1, scratch); return;
    default: return;   // not handles(): never called
  }
}
