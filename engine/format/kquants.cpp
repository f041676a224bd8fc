// kquants.cpp — Q4_K / Q5_K / Q6_K quantizers (layouts: the decoders in tensor.cpp, ggml's
// block_q4_K / q5_K / q6_K).
//
// Two levels. First every sub-block gets its own real-valued parameters: an affine fit
// x ~ a q + b (q in [0, 2^bits - 1], b <= 0) for Q4_K / Q5_K, a symmetric one x ~ s (q - 32)
// for Q6_K. Then the sub-block parameters are quantized against one fp16 super-scale per
// 256 elements (6-bit unsigned scales and minimums for Q4_K / Q5_K, int8 scales for Q6_K),
// and the elements are rounded once more with the parameters as they will be decoded.
//
// The fit is the part that matters. Mapping the sub-block's [min, max] onto the codes (the
// naive rule, KQuantFit::MinMax) wastes resolution on the extremes: a slightly larger
// scale-inverse clips the extreme element by a fraction of a step while every other element
// gets finer steps. So the search tries a range of candidate inverse scales around
// nmax / (max - min), rounds the elements with each, solves the weighted least-squares
// problem for the best (a, b) given those integer codes, re-rounds with the solution and
// solves again (one Lloyd iteration), and keeps the candidate with the smallest weighted
// squared error. The weights w = rms(x) + |x| favour the large elements, which dominate the
// matmul outputs, without ignoring the small ones (the same spirit as llama.cpp's reference
// quantizer; the candidates, the refinement step and the code are our own).
#include "format/kquants.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "format/tensor.h"

namespace llmwb {

namespace {

constexpr int kQKK = 256;
constexpr int kScalesK = 12;

// round-half-to-even of v clamped to [lo, hi], as std::clamp(nearbyint(v), lo, hi) gives, but
// inline: nearbyint is a library call on baseline x86-64 and this runs ~180 times per weight
// in the scale search. Clamping first keeps the float-to-int conversion defined for any v
// (huge, infinite or NaN, which maps to lo); within the clamp range adding and subtracting
// 1.5 * 2^23 rounds to nearest even exactly.
inline int round_clamp(float v, int lo, int hi) {
  const auto flo = static_cast<float>(lo), fhi = static_cast<float>(hi);
  const float up = v > flo ? v : flo;   // NaN -> lo; the select forms map to maxps / minps
  const float c = up < fhi ? up : fhi;
  constexpr float kMagic = 12582912.0f;
  return static_cast<int>((c + kMagic) - kMagic);
}

void store_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

// Per-element least-squares weights of one sub-block: rms(x) + |x|.
void lsq_weights(const float* x, int n, float* w) {
  float sum2 = 0.0f;
  for (int i = 0; i < n; ++i) sum2 += x[i] * x[i];
  const float rms = std::sqrt(sum2 / static_cast<float>(n));
  for (int i = 0; i < n; ++i) w[i] = rms + std::fabs(x[i]);
}

// ---------------------------------------------------------------------------- affine (Q4_K, Q5_K)

struct Affine {
  float a = 0.0f;   // step: x ~ a q + b
  float b = 0.0f;   // offset, <= 0 (stored as the non-negative minimum m = -b)
};

float affine_error(const float* x, const float* w, const uint8_t* q, int n, Affine f) {
  float e = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float d = f.a * static_cast<float>(q[i]) + f.b - x[i];
    e += w[i] * d * d;
  }
  return e;
}

void affine_round(const float* x, int n, int nmax, Affine f, uint8_t* q) {
  const float inv = f.a > 0.0f ? 1.0f / f.a : 0.0f;
  for (int i = 0; i < n; ++i) q[i] = static_cast<uint8_t>(round_clamp((x[i] - f.b) * inv, 0, nmax));
}

// The sums of the normal equations that do not depend on the codes: sum w and sum w x.
struct AffineSums {
  double sw = 0, sx = 0;
};
AffineSums affine_sums(const float* x, const float* w, int n) {
  AffineSums s;
  for (int i = 0; i < n; ++i) {
    s.sw += w[i];
    s.sx += w[i] * x[i];
  }
  return s;
}

// The (a, b) minimising sum w (a q + b - x)^2 for fixed codes q, from the sums over the
// codes (sum w q, sum w q^2, sum w q x), with b <= 0 and a >= 0. Returns false when the
// codes cannot determine a scale (all equal).
bool affine_solve_sums(const AffineSums& fixed, double sq, double sqq, double sqx, Affine* out) {
  const double sw = fixed.sw, sx = fixed.sx;
  const double det = sw * sqq - sq * sq;
  if (!(det > 0.0) || !(sqq > 0.0)) return false;
  double a = (sw * sqx - sq * sx) / det;
  double b = (sqq * sx - sq * sqx) / det;
  if (b > 0.0) {   // the format has no positive offset: best scale through the origin
    b = 0.0;
    a = sqx / sqq;
  }
  if (!(a > 0.0)) return false;
  out->a = static_cast<float>(a);
  out->b = static_cast<float>(b);
  return true;
}

// The candidate search of fit_affine, run for all candidates at once: each pass walks the
// elements once and updates every candidate's sums (lanes of a vector; target_clones builds
// AVX2 and AVX-512 copies picked at run time). Each candidate's sums are still taken in
// element order with the same operations as one candidate alone, and the engine is built
// with -ffp-contract=off, so every copy gives the same bits.
constexpr int kAffineFirst = -10, kAffineCands = 26;
constexpr int kLanes = 32;   // candidates padded to whole vectors

struct AffineCandidates {
  alignas(64) float iscale[kLanes] = {};
  alignas(64) double sq[kLanes], sqq[kLanes], sqx[kLanes];
  Affine f[kLanes], g[kLanes];
  bool okf[kLanes] = {}, okg[kLanes] = {};
  alignas(64) float ef[kLanes], eg[kLanes];
};

#define LLMWB_KQ_CLONES __attribute__((target_clones("default", "avx2", "arch=x86-64-v4")))

// Sums of the codes round((x - lo) * iscale) of every candidate.
LLMWB_KQ_CLONES void affine_first_pass(const float* x, const float* w, int n, int nmax, float lo,
                                       AffineCandidates& c) {
  double sq[kLanes] = {}, sqq[kLanes] = {}, sqx[kLanes] = {};
  for (int i = 0; i < n; ++i) {
    const float xl = x[i] - lo;
    const double wi = w[i], xi = x[i];
    for (int k = 0; k < kLanes; ++k) {
      const double qi = static_cast<double>(round_clamp(xl * c.iscale[k], 0, nmax));
      sq[k] += wi * qi;
      sqq[k] += wi * qi * qi;
      sqx[k] += wi * qi * xi;
    }
  }
  for (int k = 0; k < kLanes; ++k) {
    c.sq[k] = sq[k];
    c.sqq[k] = sqq[k];
    c.sqx[k] = sqx[k];
  }
}

// With each candidate's f: the error of f's codes and the sums of those codes (for g).
LLMWB_KQ_CLONES void affine_refine_pass(const float* x, const float* w, int n, int nmax, AffineCandidates& c) {
  float fa[kLanes], fb[kLanes], inv[kLanes], e[kLanes] = {};
  double sq[kLanes] = {}, sqq[kLanes] = {}, sqx[kLanes] = {};
  for (int k = 0; k < kLanes; ++k) {
    fa[k] = c.f[k].a;
    fb[k] = c.f[k].b;
    inv[k] = fa[k] > 0.0f ? 1.0f / fa[k] : 0.0f;
  }
  for (int i = 0; i < n; ++i) {
    const float xf = x[i], wf = w[i];
    const double wi = w[i], xi = x[i];
    for (int k = 0; k < kLanes; ++k) {
      const int q = round_clamp((xf - fb[k]) * inv[k], 0, nmax);
      const double qi = static_cast<double>(q);
      sq[k] += wi * qi;
      sqq[k] += wi * qi * qi;
      sqx[k] += wi * qi * xi;
      const float d = fa[k] * static_cast<float>(q) + fb[k] - xf;
      e[k] += wf * d * d;
    }
  }
  for (int k = 0; k < kLanes; ++k) {
    c.sq[k] = sq[k];
    c.sqq[k] = sqq[k];
    c.sqx[k] = sqx[k];
    c.ef[k] = e[k];
  }
}

// The error of each candidate's g.
LLMWB_KQ_CLONES void affine_error_pass(const float* x, const float* w, int n, int nmax, AffineCandidates& c) {
  float ga[kLanes], gb[kLanes], inv[kLanes], e[kLanes] = {};
  for (int k = 0; k < kLanes; ++k) {
    ga[k] = c.g[k].a;
    gb[k] = c.g[k].b;
    inv[k] = ga[k] > 0.0f ? 1.0f / ga[k] : 0.0f;
  }
  for (int i = 0; i < n; ++i) {
    const float xf = x[i], wf = w[i];
    for (int k = 0; k < kLanes; ++k) {
      const int q = round_clamp((xf - gb[k]) * inv[k], 0, nmax);
      const float d = ga[k] * static_cast<float>(q) + gb[k] - xf;
      e[k] += wf * d * d;
    }
  }
  for (int k = 0; k < kLanes; ++k) c.eg[k] = e[k];
}

// Fits one sub-block; writes its provisional codes to q (re-rounded later with the stored
// parameters).
Affine fit_affine(const float* x, const float* w, int n, int nmax, KQuantFit fit, uint8_t* q) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  lo = std::min(lo, 0.0f);   // b <= 0: a range above zero starts at zero
  Affine best{(hi - lo) / static_cast<float>(nmax), lo};
  if (!(hi > lo)) {   // constant non-positive sub-block (all zero included): the offset alone
    std::fill(q, q + n, uint8_t{0});
    return Affine{0.0f, lo};
  }
  affine_round(x, n, nmax, best, q);
  if (fit == KQuantFit::MinMax) return best;
  float best_err = affine_error(x, w, q, n, best);
  const AffineSums fixed = affine_sums(x, w, n);   // the same for every candidate
  // Candidate inverse scales (nmax + t) / (hi - lo) for t in [-1, +1.5]: below nmax leaves
  // headroom, above clips the extremes slightly for finer steps elsewhere. Each candidate's
  // codes are solved for (f), re-rounded and solved again (one Lloyd step, g); g, then f, is
  // kept when it lowers the error, candidates in increasing t.
  AffineCandidates c;
  for (int k = 0; k < kAffineCands; ++k)
    c.iscale[k] = (static_cast<float>(nmax) + 0.1f * static_cast<float>(k + kAffineFirst)) / (hi - lo);
  affine_first_pass(x, w, n, nmax, lo, c);
  for (int k = 0; k < kAffineCands; ++k) {
    c.okf[k] = affine_solve_sums(fixed, c.sq[k], c.sqq[k], c.sqx[k], &c.f[k]);
    if (!c.okf[k]) c.f[k] = Affine{};   // never chosen
  }
  affine_refine_pass(x, w, n, nmax, c);
  for (int k = 0; k < kAffineCands; ++k) {
    c.okg[k] = c.okf[k] && affine_solve_sums(fixed, c.sq[k], c.sqq[k], c.sqx[k], &c.g[k]);
    if (!c.okg[k]) c.g[k] = Affine{};
  }
  affine_error_pass(x, w, n, nmax, c);
  for (int k = 0; k < kAffineCands; ++k) {
    if (!c.okf[k]) continue;
    if (c.okg[k] && c.eg[k] < best_err) {
      best_err = c.eg[k];
      best = c.g[k];
    }
    if (c.ef[k] < best_err) {
      best_err = c.ef[k];
      best = c.f[k];
    }
  }
  affine_round(x, n, nmax, best, q);   // the codes the chosen parameters round to
  return best;
}

// Packs eight 6-bit scales and eight 6-bit minimums into 12 bytes (the inverse of ggml's
// get_scale_min_k4, tensor.cpp's scale_min_k4): entries 0..3 in the low 6 bits of bytes 0..3
// (scales) and 4..7 (mins); entries 4..7 keep their low 4 bits in bytes 8..11 (scale low
// nibble, min high nibble) and their top 2 bits in the top bits of bytes 0..3 / 4..7.
void pack_scales_k4(const int* sc, const int* m, uint8_t* out) {
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    out[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
    out[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0x0F) | ((m[j + 4] & 0x0F) << 4));
  }
}

// One Q4_K / Q5_K super-block: fp16 d, fp16 dmin, 12 bytes of scales, then the codes
// (returned in `codes`, 0..nmax, natural order) for the caller to pack.
void quantize_affine_superblock(const float* x, int nmax, KQuantFit fit, uint8_t* head, uint8_t* codes) {
  Affine f[8];
  float w[32];
  for (int j = 0; j < 8; ++j) {
    lsq_weights(x + 32 * j, 32, w);
    f[j] = fit_affine(x + 32 * j, w, 32, nmax, fit, codes + 32 * j);
  }
  float max_a = 0.0f, max_m = 0.0f;
  for (const Affine& s : f) {
    max_a = std::max(max_a, s.a);
    max_m = std::max(max_m, -s.b);
  }
  // Sub-block parameters as 6-bit multiples of the super-scales; the elements are then
  // re-rounded with the parameters exactly as the decoder will rebuild them (fp16 d, dmin).
  const uint16_t d16 = fp32_to_fp16(max_a / 63.0f), dmin16 = fp32_to_fp16(max_m / 63.0f);
  const float d = fp16_to_fp32(d16), dmin = fp16_to_fp32(dmin16);
  int sc[8], mq[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = d > 0.0f ? round_clamp(f[j].a / d, 0, 63) : 0;
    mq[j] = dmin > 0.0f ? round_clamp(-f[j].b / dmin, 0, 63) : 0;
  }
  store_u16(head, d16);
  store_u16(head + 2, dmin16);
  pack_scales_k4(sc, mq, head + 4);
  for (int j = 0; j < 8; ++j) {
    const Affine dec{d * static_cast<float>(sc[j]), -dmin * static_cast<float>(mq[j])};
    if (dec.a > 0.0f) affine_round(x + 32 * j, 32, nmax, dec, codes + 32 * j);
    else std::fill(codes + 32 * j, codes + 32 * j + 32, uint8_t{0});
  }
}

// ---------------------------------------------------------------------------- symmetric (Q6_K)

// The candidate passes of fit_symmetric over all candidates at once (as for fit_affine: each
// candidate's sums in element order, the same bits in every copy).
constexpr int kSymFirst = -10, kSymCands = 21;

struct SymmetricCandidates {
  alignas(64) float iscale[kLanes] = {};
  alignas(64) double sxq[kLanes], sqq[kLanes];
  alignas(64) float err[kLanes];
};

LLMWB_KQ_CLONES void symmetric_sums(const float* x, const float* w, int n, SymmetricCandidates& c) {
  double sxq[kLanes] = {}, sqq[kLanes] = {};
  for (int i = 0; i < n; ++i) {
    const float xf = x[i];
    const double wx = static_cast<double>(w[i]) * x[i], wi = w[i];
    for (int k = 0; k < kLanes; ++k) {
      const double q = static_cast<double>(round_clamp(xf * c.iscale[k], -32, 31));
      sxq[k] += wx * q;
      sqq[k] += wi * q * q;
    }
  }
  for (int k = 0; k < kLanes; ++k) {
    c.sxq[k] = sxq[k];
    c.sqq[k] = sqq[k];
  }
}

// The weighted squared error of the scales s[0..m) (inv[k] = 1 / s[k]), m 1 or kLanes; the
// result lives until the next call on this thread.
LLMWB_KQ_CLONES const float* symmetric_errors(const float* x, const float* w, int n, const float* s,
                                             const float* inv, int m) {
  thread_local float e[kLanes];
  for (int k = 0; k < kLanes; ++k) e[k] = 0.0f;
  if (m == 1) {
    for (int i = 0; i < n; ++i) {
      const float d = s[0] * static_cast<float>(round_clamp(x[i] * inv[0], -32, 31)) - x[i];
      e[0] += w[i] * d * d;
    }
    return e;
  }
  float acc[kLanes] = {};
  for (int i = 0; i < n; ++i) {
    const float xf = x[i], wf = w[i];
    for (int k = 0; k < kLanes; ++k) {
      const float d = s[k] * static_cast<float>(round_clamp(xf * inv[k], -32, 31)) - xf;
      acc[k] += wf * d * d;
    }
  }
  for (int k = 0; k < kLanes; ++k) e[k] = acc[k];
  return e;
}

// Fits x ~ s q with q in [-32, 31] for one sub-block of 16; returns s (0 for an all-zero one).
// As Q4_0 does, the element of largest magnitude maps to -32 (with its sign in s), so the
// whole range [-32, 31] is available on the other side.
float fit_symmetric(const float* x, const float* w, int n, KQuantFit fit) {
  float amax = 0.0f, vmax = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      vmax = x[i];
    }
  }
  if (amax == 0.0f) return 0.0f;
  float best = vmax / -32.0f;
  if (fit == KQuantFit::MinMax) return best;
  float inv_best = 1.0f / best;
  float best_err = symmetric_errors(x, w, n, &best, &inv_best, 1)[0];
  // Candidates -(32 + t) / vmax for t in [-1, +1] (increasing t), each solved for the least
  // squares scale of its codes; the first with the smallest error wins.
  SymmetricCandidates c;
  for (int k = 0; k < kSymCands; ++k) c.iscale[k] = -(32.0f + 0.1f * static_cast<float>(k + kSymFirst)) / vmax;
  symmetric_sums(x, w, n, c);
  float sc[kLanes] = {}, inv[kLanes] = {};
  bool ok[kLanes] = {};
  for (int k = 0; k < kSymCands; ++k) {
    if (!(c.sqq[k] > 0.0)) continue;
    sc[k] = static_cast<float>(c.sxq[k] / c.sqq[k]);   // least squares for these codes
    ok[k] = sc[k] != 0.0f;
    inv[k] = ok[k] ? 1.0f / sc[k] : 0.0f;
  }
  const float* e = symmetric_errors(x, w, n, sc, inv, kLanes);
  for (int k = 0; k < kSymCands; ++k) {
    if (ok[k] && e[k] < best_err) {
      best_err = e[k];
      best = sc[k];
    }
  }
  return best;
}

}  // namespace

void quantize_row_q4_k(const float* x, uint8_t* dst, int64_t cols, KQuantFit fit) {
  uint8_t codes[kQKK];
  for (int64_t b = 0; b < cols / kQKK; ++b, x += kQKK, dst += 4 + kScalesK + kQKK / 2) {
    quantize_affine_superblock(x, 15, fit, dst, codes);
    // Each 64 elements share 32 bytes: the first 32 in the low nibbles, the next 32 high.
    uint8_t* qs = dst + 4 + kScalesK;
    for (int j = 0; j < kQKK; j += 64, qs += 32)
      for (int l = 0; l < 32; ++l) qs[l] = static_cast<uint8_t>(codes[j + l] | (codes[j + 32 + l] << 4));
  }
}

void quantize_row_q5_k(const float* x, uint8_t* dst, int64_t cols, KQuantFit fit) {
  uint8_t codes[kQKK];
  for (int64_t b = 0; b < cols / kQKK; ++b, x += kQKK, dst += 4 + kScalesK + kQKK / 8 + kQKK / 2) {
    quantize_affine_superblock(x, 31, fit, dst, codes);
    // As Q4_K for the low 4 bits; the fifth bit of element l of sub-block s goes to bit s of qh[l].
    uint8_t* qh = dst + 4 + kScalesK;
    uint8_t* ql = qh + kQKK / 8;
    std::memset(qh, 0, kQKK / 8);
    for (int j = 0, s = 0; j < kQKK; j += 64, ql += 32, s += 2) {
      for (int l = 0; l < 32; ++l) {
        const int lo = codes[j + l], hi = codes[j + 32 + l];
        ql[l] = static_cast<uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4));
        qh[l] = static_cast<uint8_t>(qh[l] | ((lo >> 4) << s) | ((hi >> 4) << (s + 1)));
      }
    }
  }
}

void quantize_row_q6_k(const float* x, uint8_t* dst, int64_t cols, KQuantFit fit) {
  for (int64_t b = 0; b < cols / kQKK; ++b, x += kQKK, dst += kQKK / 2 + kQKK / 4 + kQKK / 16 + 2) {
    float s[16], w[16];
    for (int j = 0; j < 16; ++j) {
      lsq_weights(x + 16 * j, 16, w);
      s[j] = fit_symmetric(x + 16 * j, w, 16, fit);
    }
    // int8 sub-block scales against one fp16 d; the scale of largest magnitude maps to -128
    // (the same trick one level up).
    // The int8 range is asymmetric: scales of smax's sign map onto [-128, 0], the others onto
    // [0, 127], so d must also fit the largest of the opposite sign in 127 steps.
    float smax = 0.0f;
    for (float v : s)
      if (std::fabs(v) > std::fabs(smax)) smax = v;
    float opp = 0.0f;
    for (float v : s)
      if (v * smax < 0.0f) opp = std::max(opp, std::fabs(v));
    const float dabs = std::max(std::fabs(smax) / 128.0f, opp / 127.0f);
    const uint16_t d16 = smax == 0.0f ? uint16_t{0} : fp32_to_fp16(smax > 0.0f ? -dabs : dabs);
    const float d = fp16_to_fp32(d16);
    int8_t sc[16];
    for (int j = 0; j < 16; ++j) sc[j] = static_cast<int8_t>(d != 0.0f ? round_clamp(s[j] / d, -128, 127) : 0);
    uint8_t q[kQKK];
    for (int j = 0; j < 16; ++j) {
      const float step = d * static_cast<float>(sc[j]);
      const float inv = step != 0.0f ? 1.0f / step : 0.0f;
      for (int i = 0; i < 16; ++i) q[16 * j + i] = static_cast<uint8_t>(round_clamp(x[16 * j + i] * inv, -32, 31) + 32);
    }
    // Layout (tensor.cpp dequantize_q6_k): per half of 128, ql[64] and qh[32]; elements l,
    // l+32, l+64, l+96 (l < 32) take the low nibble of ql[l], ql[l+32], the high nibble of
    // ql[l], ql[l+32], and bits 0-1, 2-3, 4-5, 6-7 of qh[l] for their top two bits.
    uint8_t* ql = dst;
    uint8_t* qh = dst + kQKK / 2;
    for (int h = 0; h < 2; ++h) {
      const uint8_t* c = q + 128 * h;
      for (int l = 0; l < 32; ++l) {
        ql[64 * h + l] = static_cast<uint8_t>((c[l] & 0x0F) | ((c[l + 64] & 0x0F) << 4));
        ql[64 * h + l + 32] = static_cast<uint8_t>((c[l + 32] & 0x0F) | ((c[l + 96] & 0x0F) << 4));
        qh[32 * h + l] = static_cast<uint8_t>((c[l] >> 4) | ((c[l + 32] >> 4) << 2) | ((c[l + 64] >> 4) << 4) |
                                              ((c[l + 96] >> 4) << 6));
      }
    }
    std::memcpy(dst + kQKK / 2 + kQKK / 4, sc, 16);
    store_u16(dst + kQKK / 2 + kQKK / 4 + kQKK / 16, d16);
  }
}

}  // namespace llmwb
