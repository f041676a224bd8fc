// fpanel_avx512.cpp — the panel GEMV and GEMM (fpanel.h): lanes along 16 outputs, one fused
// multiply-add chain per output over k = 0 .. K - 1, x broadcast.
// GCC 12 reports its own _mm512_undefined_* placeholders as "(maybe) used uninitialized" once
// inlined (GCC bug 105593), as in matmul_avx512.cpp; the warning is spurious.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/fpanel_kernels.h"
#include "backend/cpu/prefetch.h"

namespace llmwb::cpu::fpanel {

namespace {

constexpr int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
constexpr int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

template <DType DT>
constexpr int64_t kElemBytes = DT == DType::F32 ? 4 : 2;

// The 16 weights of one panel column, widened exactly (f16 by vcvtph2ps, bf16 by a shift).
template <DType DT>
inline __m512 load_w(const uint8_t* p) {
  if constexpr (DT == DType::F32) {
    return _mm512_loadu_ps(p);
  } else if constexpr (DT == DType::F16) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  } else {
    const __m512i u = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(u, 16));
  }
}

// The outputs of the last panel that are real rows (the rest of it is zero padding).
inline __mmask16 panel_mask(const Args& a, int64_t p) {
  const int64_t valid = a.rows - p * 16;
  return valid >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << valid) - 1u);
}

// --------------------------------------------------------------------------------- GEMV

// Each panel stream is prefetched into L1 a.prefetch bytes ahead (decode_prefetch().floats in
// matmul.h: past the 4 KiB page ends where the hardware prefetchers stop; 0 = not at all).

// Panels [p, p + R) x tokens t0 .. t0 + C - 1, the weights read straight from the panels.
template <DType DT, int R, int C>
void gemv_tile(const Args& a, int64_t p, int64_t t0) {
  constexpr int64_t step = 16 * kElemBytes<DT>;   // bytes per panel column
  const int64_t K = a.cols;
  const uint8_t* w[R];
  for (int i = 0; i < R; ++i) w[i] = a.w + (p + i) * a.panel_bytes;
  const float* xt[C];
  for (int j = 0; j < C; ++j) xt[j] = a.x + (t0 + j) * K;
  __m512 acc[R][C];
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < C; ++j) acc[i][j] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    if (a.prefetch != 0 && ((k * step) & 63) == 0) {
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i)
        prefetch_t0(w[i] + k * step + a.prefetch);
    }
    __m512 wv[R];
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) wv[i] = load_w<DT>(w[i] + k * step);
#pragma GCC unroll 8
    for (int j = 0; j < C; ++j) {
      const __m512 b = _mm512_set1_ps(xt[j][k]);
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) acc[i][j] = _mm512_fmadd_ps(wv[i], b, acc[i][j]);
    }
  }
  for (int i = 0; i < R; ++i) {
    const __mmask16 m = panel_mask(a, p + i);
    for (int j = 0; j < C; ++j) _mm512_mask_storeu_ps(a.y + (t0 + j) * a.rows + (p + i) * 16, m, acc[i][j]);
  }
}

using GemvFn = void (*)(const Args&, int64_t, int64_t);
constexpr int kGemvTokens = 6;   // C: kGemvPanels (R, 4 weight streams) x 6 accumulators

template <DType DT, int R, int C>
GemvFn pick_gemv(int r, int c) {
  if constexpr (R == 0 || C == 0) {
    return nullptr;
  } else {
    if (r == R && c == C) return &gemv_tile<DT, R, C>;
    if (c == C) return pick_gemv<DT, R - 1, C>(r, c);
    return pick_gemv<DT, R, C - 1>(r, c);
  }
}

template <DType DT>
void gemv_dt(const Args& a, int64_t p0, int64_t p1) {
  for (int64_t p = p0; p < p1; p += kGemvPanels) {
    const int r = static_cast<int>(imin(kGemvPanels, p1 - p));
    for (int64_t t = 0; t < a.n_tokens; t += kGemvTokens) {
      const int c = static_cast<int>(imin(kGemvTokens, a.n_tokens - t));
      if (r == kGemvPanels && c == kGemvTokens) gemv_tile<DT, kGemvPanels, kGemvTokens>(a, p, t);
      else pick_gemv<DT, kGemvPanels, kGemvTokens>(r, c)(a, p, t);
    }
  }
}

// --------------------------------------------------------------------------------- GEMM

constexpr int kGemmPanels = 2;                       // R: 2 panels = 32 outputs
constexpr int kNR = kTokenPanel;                     // C: 12 tokens; 24 accumulators
constexpr int64_t kBlockBytes = 512 * 1024;          // f32 panel chunks of a block, in L2
constexpr int64_t kMaxBlockPanels = 64;
constexpr int64_t kGemmPrefetch = 4;                 // panel columns ahead into L1

// Panels per row block for k-chunks of kc columns: f32 within kBlockBytes, an even count >= 2.
constexpr int64_t block_panels(int64_t kc) {
  const int64_t n = kBlockBytes / (imax(1, kc) * 64);
  return imax(2, imin(kMaxBlockPanels, n) / 2 * 2);
}

// A range of memory to prefetch into L2, one line per k-step, alongside a tile.
struct Prefetch {
  const char* p = nullptr;
  int64_t bytes = 0;
};

// R f32 panels (pstride floats apart) x C tokens of a packed x chunk, kn columns, continuing
// the chains stored in y (or from zero when `first`): storing and reloading a float is exact,
// so the k-chunks leave every chain exactly the one the GEMV forms in registers. Alongside:
// the y lines of the next tile (ynext) into L1, then pf[0] and pf[1] into L2.
template <int R, int C>
void gemm_tile(const float* w0, int64_t pstride, const float* xb, int64_t kn, float* y, int64_t ys, __mmask16 mlast,
               bool first, const float* ynext, const Prefetch* pf) {
  const float* w[R];
  for (int i = 0; i < R; ++i) w[i] = w0 + i * pstride;
  __m512 acc[R][C];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
    const __mmask16 m = i == R - 1 ? mlast : static_cast<__mmask16>(0xFFFF);
#pragma GCC unroll 16
    for (int j = 0; j < C; ++j) acc[i][j] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m, y + j * ys + i * 16);
  }
  const char* pp = pf[0].p;
  int64_t left = pf[0].bytes;
  int which = 0;
  for (int64_t k = 0; k < kn; ++k) {
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i)
      prefetch_t0(w[i] + (k + kGemmPrefetch) * 16);
    if (k < R * C && ynext != nullptr) {
      prefetch_t0(ynext + (k / R) * ys + (k % R) * 16);
    } else if (left > 0) {
      prefetch_t1(pp);
      pp += 64;
      left -= 64;
      if (left <= 0 && which == 0) {
        which = 1;
        pp = pf[1].p;
        left = pf[1].bytes;
      }
    }
    __m512 wv[R];
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) wv[i] = _mm512_load_ps(w[i] + k * 16);
    const float* xk = xb + k * kNR;
#pragma GCC unroll 16
    for (int j = 0; j < C; ++j) {
      const __m512 b = _mm512_set1_ps(xk[j]);
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) acc[i][j] = _mm512_fmadd_ps(wv[i], b, acc[i][j]);
    }
  }
  for (int i = 0; i < R; ++i) {
    const __mmask16 m = i == R - 1 ? mlast : static_cast<__mmask16>(0xFFFF);
    for (int j = 0; j < C; ++j) _mm512_mask_storeu_ps(y + j * ys + i * 16, m, acc[i][j]);
  }
}

using GemmFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, __mmask16, bool, const float*,
                        const Prefetch*);

template <int R, int C>
GemmFn pick_gemm(int r, int c) {
  if constexpr (R == 0 || C == 0) {
    return nullptr;
  } else {
    if (r == R && c == C) return &gemm_tile<R, C>;
    if (c == C) return pick_gemm<R - 1, C>(r, c);
    return pick_gemm<R, C - 1>(r, c);
  }
}

// Loop nest (BLIS order): row blocks of this thread's panels; k-chunks of chunk_cols(K)
// columns (the block's chunk in L2: f32 panels in place, f16 / bf16 ones widened into
// scratch); token panels (the x chunk of 12 tokens, ~18 KiB, in L1); panel pairs (the 2 x 12
// tile, partial sums kept in y between chunks). Alongside, each tile prefetches the y lines
// of the next tile into L1 and a slice of the next token panel's x into L2, and the tiles of
// the last quarter of the token panels a slice of the next chunk's weights into L2 (earlier,
// the x streaming through L2 would evict them again).
template <DType DT>
void gemm_dt(const Args& a, int64_t p0, int64_t p1, float* scratch, const NextRange& after) {
  constexpr int64_t eb = kElemBytes<DT>;
  const int64_t K = a.cols, T = a.n_tokens, ys = a.rows;
  const int64_t kc = chunk_cols(K);
  const int64_t mcp = block_panels(kc);
  const int64_t n_tp = (T + kNR - 1) / kNR;
  const int64_t pf_tp = imax(1, n_tp / 4);
  for (int64_t pb = p0; pb < p1; pb += mcp) {
    const int64_t pe = imin(p1, pb + mcp), np = pe - pb;
    const int64_t tiles = (np + kGemmPanels - 1) / kGemmPanels;
    for (int64_t k0 = 0; k0 < K; k0 += kc) {
      const int64_t k1 = imin(K, k0 + kc), kn = k1 - k0;
      const float* wb;
      int64_t pstride;
      if constexpr (DT == DType::F32) {
        wb = reinterpret_cast<const float*>(a.w + pb * a.panel_bytes) + k0 * 16;
        pstride = K * 16;
      } else {
        for (int64_t i = 0; i < np; ++i) {
          const uint8_t* src = a.w + (pb + i) * a.panel_bytes + k0 * 16 * eb;
          float* dst = scratch + i * kn * 16;
          for (int64_t k = 0; k < kn; ++k) _mm512_store_ps(dst + k * 16, load_w<DT>(src + k * 16 * eb));
        }
        wb = scratch;
        pstride = kn * 16;
      }
      // What comes after this chunk: the next chunk of the block, else the first of the next,
      // else (the range is done) the first chunk of the range this thread takes next, which
      // shares x and so K, kc and the block size.
      const Args* na = &a;
      int64_t nb = pb, nk0 = k1, nend = p1;
      if (nk0 >= K) {
        nb = pe;
        nk0 = 0;
      }
      if (nb >= p1 && after.a != nullptr && after.a->cols == K) {
        na = after.a;
        nb = after.p0;
        nend = after.p1;
      }
      const int64_t neb = static_cast<int64_t>(na->panel_bytes) / (16 * K);   // its element bytes
      const int64_t nnp = nb < nend ? imin(nend, nb + mcp) - nb : 0;
      const int64_t nkn = imin(K, nk0 + kc) - nk0;
      const int64_t seg_bytes = nkn * 16 * neb;   // one panel's piece of the next chunk
      const int64_t next_w_bytes = nnp * seg_bytes;
      const int64_t w_slice = (next_w_bytes / 64 + pf_tp * tiles - 1) / (pf_tp * tiles) * 64;
      int64_t w_done = 0;
      const float* xchunk = a.xp + k0 * n_tp * kNR;
      const int64_t xq_bytes = kn * kNR * 4;
      const int64_t x_slice = (xq_bytes / 64 + tiles - 1) / tiles * 64;
      for (int64_t q = 0; q < n_tp; ++q) {
        const int c = static_cast<int>(imin(kNR, T - q * kNR));
        const float* xb = xchunk + q * kn * kNR;
        // The next token panel's x chunk (after the last one: the next chunk's first).
        const char* next_x = reinterpret_cast<const char*>(q + 1 < n_tp ? xb + kn * kNR : a.xp + nk0 * n_tp * kNR);
        const bool pf_w = q >= n_tp - pf_tp;
        int64_t x_off = 0;
        for (int64_t r = 0; r < np; r += kGemmPanels) {
          const int rr = static_cast<int>(imin(kGemmPanels, np - r));
          const __mmask16 mlast =
              pb + r + rr == a.panels ? panel_mask(a, a.panels - 1) : static_cast<__mmask16>(0xFFFF);
          Prefetch pf[2];
          pf[0] = {next_x + x_off, imax(0, imin(x_slice, xq_bytes - x_off))};
          x_off += x_slice;
          if (pf_w && w_done < next_w_bytes) {
            // A piece of one panel's segment (the next tile continues where this one stops).
            const int64_t seg = w_done / seg_bytes, off = w_done % seg_bytes;
            const int64_t n = imin(w_slice, seg_bytes - off);
            pf[1] = {reinterpret_cast<const char*>(na->w + (nb + seg) * na->panel_bytes + nk0 * 16 * neb) + off, n};
            w_done += n;
          }
          if (pf[0].bytes == 0) {
            pf[0] = pf[1];
            pf[1] = {};
          }
          // The next tile's y: the next pair of this token panel, else the first of the next.
          const float* ynext = r + kGemmPanels < np ? a.y + q * kNR * ys + (pb + r + kGemmPanels) * 16
                               : q + 1 < n_tp       ? a.y + (q + 1) * kNR * ys + pb * 16
                                                    : nullptr;
          float* yt = a.y + q * kNR * ys + (pb + r) * 16;
          const float* wt = wb + r * pstride;
          if (rr == kGemmPanels && c == kNR) {
            gemm_tile<kGemmPanels, kNR>(wt, pstride, xb, kn, yt, ys, mlast, k0 == 0, ynext, pf);
          } else {
            pick_gemm<kGemmPanels, kNR>(rr, c)(wt, pstride, xb, kn, yt, ys, mlast, k0 == 0, ynext, pf);
          }
        }
      }
    }
  }
}

}  // namespace

void gemv(const Args& a, int64_t p0, int64_t p1) {
  switch (a.dtype) {
    case DType::F32: gemv_dt<DType::F32>(a, p0, p1); return;
    case DType::F16: gemv_dt<DType::F16>(a, p0, p1); return;
    case DType::BF16: gemv_dt<DType::BF16>(a, p0, p1); return;
    default: return;   // panel_dtype() is checked before
  }
}

void gemm(const Args& a, int64_t p0, int64_t p1, float* scratch, const NextRange& after) {
  switch (a.dtype) {
    case DType::F32: gemm_dt<DType::F32>(a, p0, p1, scratch, after); return;
    case DType::F16: gemm_dt<DType::F16>(a, p0, p1, scratch, after); return;
    case DType::BF16: gemm_dt<DType::BF16>(a, p0, p1, scratch, after); return;
    default: return;
  }
}

int64_t chunk_cols(int64_t cols) {
  const int64_t n = imax(1, (cols + kKc - 1) / kKc);
  return (cols + n - 1) / n;
}

int64_t gemm_scratch_floats(int64_t cols) {
  const int64_t kc = chunk_cols(cols);
  return block_panels(kc) * kc * 16 + 16;
}

int64_t xp_floats(int64_t n_tokens, int64_t cols) { return (n_tokens + kNR - 1) / kNR * kNR * cols; }

void pack_x(const Args& a, int64_t q0, int64_t q1, float* xp) {
  const int64_t K = a.cols, kc = chunk_cols(K);
  const int64_t n_tp = (a.n_tokens + kNR - 1) / kNR;
  for (int64_t q = q0; q < q1; ++q) {
    const int c = static_cast<int>(imin(kNR, a.n_tokens - q * kNR));
    const float* src[kNR];
    for (int j = 0; j < c; ++j) src[j] = a.x + (q * kNR + j) * K;
    for (int64_t k0 = 0; k0 < K; k0 += kc) {
      const int64_t kn = imin(K, k0 + kc) - k0;
      float* dst = xp + k0 * n_tp * kNR + q * kn * kNR;
      for (int64_t k = 0; k < kn; ++k)
        for (int j = 0; j < c; ++j) dst[k * kNR + j] = src[j][k0 + k];
    }
  }
}

void pack_panels(DType dtype, const uint8_t* w, uint64_t row_bytes, int64_t rows, int64_t cols, int64_t q0, int64_t q1,
                 uint8_t* dst, uint64_t panel_bytes) {
  // Column k of a panel is a gather down its 16 rows (row_bytes apart); 16-bit types gather
  // two columns per dword and split them.
  const __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                         _mm512_set1_epi32(static_cast<int>(row_bytes)));
  for (int64_t q = q0; q < q1; ++q) {
    const int64_t nr = imin(16, rows - q * 16);
    const __mmask16 m = nr >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << nr) - 1u);
    const uint8_t* src = w + static_cast<uint64_t>(q) * 16 * row_bytes;
    uint8_t* out = dst + static_cast<uint64_t>(q) * panel_bytes;
    if (dtype == DType::F32) {
      for (int64_t k = 0; k < cols; ++k) {
        const __m512 v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, idx, src + 4 * k, 1);
        _mm512_storeu_ps(out + 64 * k, v);
      }
      continue;
    }
    int64_t k = 0;
    for (; k + 2 <= cols; k += 2) {
      const __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, idx, src + 2 * k, 1);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 32 * k), _mm512_cvtepi32_epi16(v));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 32 * (k + 1)), _mm512_cvtepi32_epi16(_mm512_srli_epi32(v, 16)));
    }
    for (; k < cols; ++k)
      for (int64_t l = 0; l < nr; ++l) __builtin_memcpy(out + 32 * k + 2 * l, src + l * row_bytes + 2 * k, 2);
  }
}

}  // namespace llmwb::cpu::fpanel
