// matmul_simd.inl — the GEMV and tiled GEMM kernels, written once for any vector width.
//
// Included by matmul_avx2.cpp and matmul_avx512.cpp *inside* their own namespace
// (llmwb::cpu::avx2 / ::avx512) after they define `struct V`, the vector primitives of their
// instruction set (see either file for the list). Every function here therefore has a
// distinct name per instruction set, so no AVX-512 copy can stand in for the AVX2 one.
// The includer provides <immintrin.h>, <cstdint> and matmul_kernels.h.
//
// GEMV (decode, few tokens): vectors run along k. A tile of RR rows x TT tokens keeps RR*TT
// accumulators; each weight vector is loaded (and converted from f16/bf16/q8/q4) once and
// used for TT tokens, each x vector is used for RR rows. Memory-bound for one token.
//
// GEMM (prefill): the GotoBLAS/BLIS scheme with the vector along the *token* axis, so that
// the weights never need transposing. x is packed once per call into panels of V::kPanel
// tokens (xp[p][k][j], done by matmul.cpp). The micro-kernel holds kGemmRows x kGemmVecs
// accumulators (rows x token vectors): per k it loads kGemmVecs vectors of xp and broadcasts
// one weight per row, i.e. kGemmRows*kGemmVecs FMAs for kGemmRows+kGemmVecs loads, which is
// FMA-bound with the weight rows in L1 and the xp panel streaming from L2. Weight rows
// that are not f32 are decoded for a k-block of kKc columns into a small scratch tile once
// and reused for every panel; f32 weights are read in place (see gemm_dt for the loop nest).

using reg = typename V::reg;
constexpr int W = V::W;
constexpr int kQK = 32;

inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

inline uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  __builtin_memcpy(&v, p, 2);
  return v;
}

// One weight element, for the column tails that do not fill a vector.
template <DType DT>
inline float weight_at(const uint8_t* row, int64_t k) {
  if constexpr (DT == DType::F32) {
    float f;
    __builtin_memcpy(&f, row + 4 * k, 4);
    return f;
  } else if constexpr (DT == DType::F16) {
    return fp16_to_fp32(load_u16(row + 2 * k));
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

// Weights j..j+W-1 of one quantized block (j a multiple of W, below 32), unscaled.
template <DType DT>
inline reg load_block(const uint8_t* block, int j) {
  if constexpr (DT == DType::Q8_0) {
    return V::load_i8(block + 2 + j);
  } else {
    // Q4_0: byte i holds element i (low nibble) and element i + 16 (high nibble).
    return j < kQK / 2 ? V::load_q4lo(block + 2 + j) : V::load_q4hi(block + 2 + j - kQK / 2);
  }
}

constexpr bool is_quantized(DType dt) { return dt == DType::Q8_0 || dt == DType::Q4_0; }

template <DType DT>
constexpr int64_t block_bytes() {
  return DT == DType::Q8_0 ? 2 + kQK : 2 + kQK / 2;
}

// ---------------------------------------------------------------------------------- GEMV

template <DType DT, int RR, int TT>
inline void gemv_tile(const MatmulArgs& a, int64_t r, int64_t t) {
  const int64_t K = a.cols;
  const uint8_t* wr[RR];
  const float* xt[TT];
  for (int i = 0; i < RR; ++i) wr[i] = a.w + (r + i) * a.w_row_bytes;
  for (int j = 0; j < TT; ++j) xt[j] = a.x + (t + j) * K;

  reg acc[RR][TT];
#pragma GCC unroll 16
  for (int i = 0; i < RR; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < TT; ++j) acc[i][j] = V::zero();

  float res[RR][TT];
  if constexpr (!is_quantized(DT)) {
    int64_t k = 0;
    for (; k + W <= K; k += W) {
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
    for (int i = 0; i < RR; ++i)
      for (int j = 0; j < TT; ++j) res[i][j] = V::hsum(acc[i][j]);
    for (; k < K; ++k) {
      for (int i = 0; i < RR; ++i) {
        const float w = weight_at<DT>(wr[i], k);
        for (int j = 0; j < TT; ++j) res[i][j] += w * xt[j][k];
      }
    }
  } else {
    constexpr int64_t bb = block_bytes<DT>();
    for (int64_t b = 0; b < K / kQK; ++b) {
      float d[RR];
      for (int i = 0; i < RR; ++i) d[i] = fp16_to_fp32(load_u16(wr[i] + b * bb));
#pragma GCC unroll 4
      for (int jj = 0; jj < kQK; jj += W) {
        reg xv[TT];
#pragma GCC unroll 16
        for (int j = 0; j < TT; ++j) xv[j] = V::load(xt[j] + b * kQK + jj);
#pragma GCC unroll 16
        for (int i = 0; i < RR; ++i) {
          const reg w = V::mul(load_block<DT>(wr[i] + b * bb, jj), V::set1(d[i]));
#pragma GCC unroll 16
          for (int j = 0; j < TT; ++j) acc[i][j] = V::fma(w, xv[j], acc[i][j]);
        }
      }
    }
    for (int i = 0; i < RR; ++i)
      for (int j = 0; j < TT; ++j) res[i][j] = V::hsum(acc[i][j]);
  }
  for (int i = 0; i < RR; ++i)
    for (int j = 0; j < TT; ++j) a.y[(t + j) * a.rows + r + i] = res[i][j];
}

template <DType DT, int RR>
inline void gemv_rows(const MatmulArgs& a, int64_t r) {
  int64_t t = 0;
  for (; t + V::kGemvTokens <= a.n_tokens; t += V::kGemvTokens) {
    gemv_tile<DT, RR, V::kGemvTokens>(a, r, t);
  }
  switch (a.n_tokens - t) {
    case 1: gemv_tile<DT, RR, 1>(a, r, t); break;
    case 2: if constexpr (V::kGemvTokens > 2) gemv_tile<DT, RR, 2>(a, r, t); break;
    case 3: if constexpr (V::kGemvTokens > 3) gemv_tile<DT, RR, 3>(a, r, t); break;
    default: break;
  }
}

template <DType DT>
void gemv_dt(const MatmulArgs& a, int64_t r0, int64_t r1) {
  int64_t r = r0;
  for (; r + V::kGemvRows <= r1; r += V::kGemvRows) gemv_rows<DT, V::kGemvRows>(a, r);
  for (; r < r1; ++r) gemv_rows<DT, 1>(a, r);
}

// ---------------------------------------------------------------------------------- GEMM

using MicroFn = void (*)(const float* const* w, const float* xp, int64_t kn, float* c, bool accumulate);

// c[i][v*W + l] (+)= sum_k w[i][k] * xp[k][v*W + l] for R rows and NV token vectors. The
// tile c (rows of V::kPanel floats) carries the partial sums from one k-block to the next.
template <int R, int NV>
void gemm_micro(const float* const* w, const float* xp, int64_t kn, float* c, bool accumulate) {
  const float* wr[R];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) wr[i] = w[i];
  reg acc[R][NV];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = accumulate ? V::load(c + i * V::kPanel + v * W) : V::zero();
  for (int64_t k = 0; k < kn; ++k, xp += V::kPanel) {
    reg b[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) b[v] = V::load(xp + v * W);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const reg s = V::set1(wr[i][k]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = V::fma(s, b[v], acc[i][v]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) V::store(c + i * V::kPanel + v * W, acc[i][v]);
}

template <int R, int NV>
MicroFn pick_micro(int nr) {
  if constexpr (R == 0) {
    return nullptr;
  } else {
    if (nr == R) return &gemm_micro<R, NV>;
    return pick_micro<R - 1, NV>(nr);
  }
}

template <int NV>
MicroFn pick_micro_nv(int nr, int nv) {
  if constexpr (NV == 0) {
    return nullptr;
  } else {
    if (nv == NV) return pick_micro<V::kGemmRows, NV>(nr);
    return pick_micro_nv<NV - 1>(nr, nv);
  }
}

// Columns [k0, k0 + n) of a weight row as floats.
template <DType DT>
inline void decode_range(const uint8_t* row, int64_t k0, int64_t n, float* out) {
  if constexpr (!is_quantized(DT)) {
    int64_t i = 0;
    for (; i + W <= n; i += W) V::store(out + i, load_weights<DT>(row, k0 + i));
    for (; i < n; ++i) out[i] = weight_at<DT>(row, k0 + i);
  } else {
    // k0 and n are multiples of the block size (kKc is, and quantized rows are).
    constexpr int64_t bb = block_bytes<DT>();
    const uint8_t* blk = row + (k0 / kQK) * bb;
    for (int64_t i = 0; i < n; i += kQK, blk += bb) {
      const reg d = V::set1(fp16_to_fp32(load_u16(blk)));
#pragma GCC unroll 4
      for (int j = 0; j < kQK; j += W) V::store(out + i + j, V::mul(load_block<DT>(blk, j), d));
    }
  }
}

// Loop nest (outermost first): blocks of kRowBlock rows of this thread, passes over at most
// kPanelsPerPass token panels, k-blocks of kKc columns, row tiles, panels. The partial sums
// of a row block x pass live in `acc` (tile-major, kGemmRows x kPanel floats per tile) across
// k-blocks, and are transposed into y once at the end, so the scalar transpose costs once
// per K, not once per k-block. The packed x of one pass and k-block (~1 MiB) stays in L2
// while all row tiles of the block sweep over it; the weights of one tile and k-block stay
// in L1 while all panels of the pass sweep over them.
template <DType DT>
void gemm_dt(const MatmulArgs& a, int64_t r0, int64_t r1, float* scratch) {
  static_assert(V::kKc % kQK == 0, "k-blocks must hold whole quantized blocks");
  static_assert(V::kRowBlock % V::kGemmRows == 0, "row blocks must hold whole row tiles");
  constexpr int P = V::kPanel;
  constexpr int RT = V::kGemmRows;
  constexpr int64_t tile_floats = int64_t{RT} * P;
  const int64_t K = a.cols, N = a.rows, T = a.n_tokens;
  const int64_t n_panels = (T + P - 1) / P;
  float* wtile = scratch;                          // RT x kKc decoded weights
  float* acc = scratch + int64_t{RT} * V::kKc;     // kRowBlock/RT x kPanelsPerPass tiles
  const float* wp[RT];

  for (int64_t rb0 = r0; rb0 < r1; rb0 += V::kRowBlock) {
    const int64_t rb1 = imin(r1, rb0 + V::kRowBlock);
    for (int64_t p0 = 0; p0 < n_panels; p0 += V::kPanelsPerPass) {
      const int64_t p1 = imin(n_panels, p0 + V::kPanelsPerPass);
      for (int64_t k0 = 0; k0 < K; k0 += V::kKc) {
        const int64_t kn = imin(V::kKc, K - k0);
        for (int64_t rt = rb0; rt < rb1; rt += RT) {
          const int nr = static_cast<int>(imin(RT, rb1 - rt));
          for (int i = 0; i < nr; ++i) {
            const uint8_t* row = a.w + (rt + i) * a.w_row_bytes;
            if constexpr (DT == DType::F32) {
              wp[i] = reinterpret_cast<const float*>(row) + k0;
            } else {
              decode_range<DT>(row, k0, kn, wtile + i * V::kKc);
              wp[i] = wtile + i * V::kKc;
            }
          }
          float* acc_row = acc + (rt - rb0) / RT * V::kPanelsPerPass * tile_floats;
          for (int64_t p = p0; p < p1; ++p) {
            const int nt = static_cast<int>(imin(P, T - p * P));
            const int nv = (nt + W - 1) / W;
            pick_micro_nv<V::kGemmVecs>(nr, nv)(wp, a.xp + (p * K + k0) * P, kn,
                                                acc_row + (p - p0) * tile_floats, k0 > 0);
          }
        }
      }
      // Tiles hold tokens along their rows; y holds them along its columns.
      for (int64_t rt = rb0; rt < rb1; rt += RT) {
        const int nr = static_cast<int>(imin(RT, rb1 - rt));
        const float* acc_row = acc + (rt - rb0) / RT * V::kPanelsPerPass * tile_floats;
        for (int64_t p = p0; p < p1; ++p) {
          const float* tile = acc_row + (p - p0) * tile_floats;
          const int nt = static_cast<int>(imin(P, T - p * P));
          for (int t = 0; t < nt; ++t) {
            float* yr = a.y + (p * P + t) * N + rt;
            for (int i = 0; i < nr; ++i) yr[i] = tile[i * P + t];
          }
        }
      }
    }
  }
}

// Scratch one thread needs for gemm().
constexpr int64_t gemm_scratch_floats() {
  return int64_t{V::kGemmRows} * V::kKc + int64_t{V::kRowBlock} / V::kGemmRows * V::kPanelsPerPass * V::kGemmRows * V::kPanel;
}

// ---------------------------------------------------------------------------- dispatch

inline void gemv(const MatmulArgs& a, int64_t r0, int64_t r1) {
  switch (a.dtype) {
    case DType::F32: gemv_dt<DType::F32>(a, r0, r1); return;
    case DType::F16: gemv_dt<DType::F16>(a, r0, r1); return;
    case DType::BF16: gemv_dt<DType::BF16>(a, r0, r1); return;
    case DType::Q8_0: gemv_dt<DType::Q8_0>(a, r0, r1); return;
    case DType::Q4_0: gemv_dt<DType::Q4_0>(a, r0, r1); return;
  }
}

inline void gemm(const MatmulArgs& a, int64_t r0, int64_t r1, float* scratch) {
  switch (a.dtype) {
    case DType::F32: gemm_dt<DType::F32>(a, r0, r1, scratch); return;
    case DType::F16: gemm_dt<DType::F16>(a, r0, r1, scratch); return;
    case DType::BF16: gemm_dt<DType::BF16>(a, r0, r1, scratch); return;
    case DType::Q8_0: gemm_dt<DType::Q8_0>(a, r0, r1, scratch); return;
    case DType::Q4_0: gemm_dt<DType::Q4_0>(a, r0, r1, scratch); return;
  }
}
