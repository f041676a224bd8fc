// test_attention.cpp — cpu::attend_head (one head of paged attention) against direct
// double-precision math, on every SIMD level this CPU has (AVX-512 runs its own kernel for
// head sizes that are a multiple of 16, the others the portable loop); cpu::attend_queries
// (query heads sharing K/V rows) bitwise against attend_head per head.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/attention.h"
#include "backend/cpu/matmul.h"

namespace llmwb {
namespace {

using cpu::SimdLevel;

class LevelGuard {
 public:
  LevelGuard() : saved_(cpu::simd_level()) {}
  ~LevelGuard() { cpu::set_simd_level(saved_); }

 private:
  SimdLevel saved_;
};

struct Head {
  std::vector<float> q, k, v;   // k, v: ctx rows of hd floats, stored in reverse (paged: any order)
  std::vector<const float*> krows, vrows;
};

Head random_head(int ctx, int hd, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  Head h;
  h.q.resize(static_cast<size_t>(hd));
  h.k.resize(static_cast<size_t>(ctx) * hd);
  h.v.resize(static_cast<size_t>(ctx) * hd);
  for (float& f : h.q) f = nd(rng);
  for (float& f : h.k) f = nd(rng);
  for (float& f : h.v) f = nd(rng);
  for (int j = 0; j < ctx; ++j) {
    h.krows.push_back(h.k.data() + static_cast<size_t>(ctx - 1 - j) * hd);
    h.vrows.push_back(h.v.data() + static_cast<size_t>(ctx - 1 - j) * hd);
  }
  return h;
}

// n random queries of hd floats with probs rows of probs_len and outputs, poisoned with -1.
struct Queries {
  std::vector<std::vector<float>> q, probs, out;
  std::vector<const float*> qp;
  std::vector<float*> pp, op;
  Queries(int n, int hd, int probs_len, uint32_t seed) : q(n), probs(n), out(n), qp(n), pp(n), op(n) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 2.0f);
    for (int g = 0; g < n; ++g) {
      q[g].resize(static_cast<size_t>(hd));
      for (float& f : q[g]) f = nd(rng);
      probs[g].assign(static_cast<size_t>(probs_len), -1.0f);
      out[g].assign(static_cast<size_t>(hd), -1.0f);
      qp[g] = q[g].data();
      pp[g] = probs[g].data();
      op[g] = out[g].data();
    }
  }
  // Query g's probs (its first ctx) and output are bitwise attend_head's for it alone.
  void expect_single(int g, const Head& h, int ctx, int hd, float scale) const {
    std::vector<float> p1(static_cast<size_t>(ctx)), o1(static_cast<size_t>(hd));
    cpu::attend_head(q[g].data(), h.krows.data(), h.vrows.data(), ctx, hd, scale, p1.data(), o1.data());
    EXPECT_EQ(0, std::memcmp(p1.data(), probs[g].data(), p1.size() * sizeof(float))) << "query " << g;
    EXPECT_EQ(0, std::memcmp(o1.data(), out[g].data(), o1.size() * sizeof(float))) << "query " << g;
  }
};

TEST(Attention, HeadMatchesFloat64SoftmaxOfScaledDotsOnEveryLevel) {
  LevelGuard guard;
  for (SimdLevel level : {SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx512}) {
    cpu::set_simd_level(level);
    if (cpu::simd_level() != level) continue;
    for (int hd : {8, 16, 24, 32, 40, 64, 120, 128, 136, 144, 256}) {
      for (int ctx : {1, 2, 3, 4, 5, 9, 17, 130}) {
        SCOPED_TRACE(std::string(cpu::simd_level_name(level)) + " hd " + std::to_string(hd) + " ctx " +
                     std::to_string(ctx));
        const Head h = random_head(ctx, hd, static_cast<uint32_t>(hd * 1000 + ctx));
        const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
        // 16 floats past the head: a kernel that stores past hd columns changes them.
        std::vector<float> probs(static_cast<size_t>(ctx)), out(static_cast<size_t>(hd) + 16, -1.0f);
        cpu::attend_head(h.q.data(), h.krows.data(), h.vrows.data(), ctx, hd, scale, probs.data(), out.data());
        for (int i = hd; i < hd + 16; ++i) EXPECT_EQ(out[i], -1.0f) << "column " << i << " past the head";

        std::vector<double> p(static_cast<size_t>(ctx));
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j < ctx; ++j) {
          double d = 0;
          for (int i = 0; i < hd; ++i) d += double(h.q[i]) * h.krows[j][i];
          p[j] = d * scale;
          mx = std::max(mx, p[j]);
        }
        for (double& x : p) sum += (x = std::exp(x - mx));
        double psum = 0;
        for (int j = 0; j < ctx; ++j) {
          p[j] /= sum;
          EXPECT_NEAR(probs[j], p[j], 1e-5 * p[j] + 1e-6) << "key " << j;
          psum += probs[j];
        }
        EXPECT_NEAR(psum, 1.0, 1e-5);
        for (int i = 0; i < hd; ++i) {
          double o = 0, mag = 0;
          for (int j = 0; j < ctx; ++j) {
            o += p[j] * h.vrows[j][i];
            mag += std::fabs(p[j] * h.vrows[j][i]);
          }
          EXPECT_NEAR(out[i], o, 1e-5 * mag + 1e-6) << "column " << i;
        }
      }
    }
  }
}

// A head's output depends on its inputs only: the same q, K and V give the same bits however
// many keys came before in other calls and wherever the rows lie in memory.
TEST(Attention, SameInputsGiveSameBitsWhereverTheRowsLie) {
  const int hd = 64, ctx = 37;
  const Head h = random_head(ctx, hd, 5);
  std::vector<float> copy_k(h.k), copy_v(h.v);
  std::vector<const float*> kr(static_cast<size_t>(ctx)), vr(static_cast<size_t>(ctx));
  for (int j = 0; j < ctx; ++j) {
    kr[j] = copy_k.data() + (h.krows[j] - h.k.data());
    vr[j] = copy_v.data() + (h.vrows[j] - h.v.data());
  }
  std::vector<float> p1(ctx), p2(ctx), o1(hd), o2(hd);
  cpu::attend_head(h.q.data(), h.krows.data(), h.vrows.data(), ctx, hd, 0.125f, p1.data(), o1.data());
  const Head other = random_head(ctx + 50, hd, 6);   // a longer call in between
  std::vector<float> po(ctx + 50), oo(hd);
  cpu::attend_head(other.q.data(), other.krows.data(), other.vrows.data(), ctx + 50, hd, 0.125f, po.data(), oo.data());
  cpu::attend_head(h.q.data(), kr.data(), vr.data(), ctx, hd, 0.125f, p2.data(), o2.data());
  EXPECT_EQ(p1, p2);
  EXPECT_EQ(o1, o2);
}

// Grouped heads must give every head exactly attend_head's bits (batch invariance: a head's
// result cannot depend on which heads a task groups it with), for every group size and the
// context lengths around the kernels' 4-key and 2-key steps.
TEST(Attention, GroupedHeadsAreBitwiseSingleHeadsOnEveryLevel) {
  LevelGuard guard;
  for (SimdLevel level : {SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx512}) {
    cpu::set_simd_level(level);
    if (cpu::simd_level() != level) continue;
    for (int hd : {8, 16, 24, 32, 48, 64, 96, 128}) {
      for (int ctx : {1, 2, 3, 4, 5, 7, 8, 9, 33, 130}) {
        for (int n : {1, 2, 3, 4, 5, 8, 11, 16, 21}) {
          SCOPED_TRACE(std::string(cpu::simd_level_name(level)) + " hd " + std::to_string(hd) + " ctx " +
                       std::to_string(ctx) + " heads " + std::to_string(n));
          const Head h = random_head(ctx, hd, static_cast<uint32_t>(hd * 7919 + ctx * 31 + n));
          Queries qs(n, hd, ctx, static_cast<uint32_t>(n * 101 + ctx));
          const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
          const std::vector<int> ctxs(static_cast<size_t>(n), ctx);   // heads of one token: one length
          cpu::attend_queries(n, qs.qp.data(), ctxs.data(), h.krows.data(), h.vrows.data(), hd, scale, qs.pp.data(),
                              qs.op.data());
          for (int g = 0; g < n; ++g) qs.expect_single(g, h, ctx, hd, scale);
        }
      }
    }
  }
}

// Queries of different lengths over shared K/V rows (a prefill tile: consecutive tokens of one
// sequence, the later ones seeing more keys): each bitwise its own attend_head, on every level;
// probs are only promised up to each query's own length.
TEST(Attention, QueriesOfDifferentLengthsAreBitwiseSingleHeadsOnEveryLevel) {
  LevelGuard guard;
  for (SimdLevel level : {SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx512}) {
    cpu::set_simd_level(level);
    if (cpu::simd_level() != level) continue;
    for (int hd : {16, 32, 64, 128}) {
      for (const std::vector<int>& ctxs : std::vector<std::vector<int>>{
               {1, 2, 3, 4}, {5, 6, 7, 8}, {37, 38, 39, 40}, {8, 9}, {130, 131, 132}, {3, 3, 4, 4}, {64, 1, 9, 2, 33},
               // 16-query tiles: 16 tokens of one head; 4 heads x 4 tokens; a ragged 13; 16 + 3
               {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
               {97, 97, 97, 97, 98, 98, 98, 98, 99, 99, 99, 99, 100, 100, 100, 100},
               {40, 3, 17, 29, 1, 2, 64, 63, 5, 8, 33, 31, 30},
               {20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38}}) {
        const int n = static_cast<int>(ctxs.size());
        int cmax = 0;
        for (int c : ctxs) cmax = std::max(cmax, c);
        SCOPED_TRACE(std::string(cpu::simd_level_name(level)) + " hd " + std::to_string(hd) + " queries " +
                     std::to_string(n) + " longest " + std::to_string(cmax));
        const Head h = random_head(cmax, hd, static_cast<uint32_t>(hd * 13 + cmax * 7 + n));
        Queries qs(n, hd, cmax, static_cast<uint32_t>(n * 17 + cmax));
        const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
        cpu::attend_queries(n, qs.qp.data(), ctxs.data(), h.krows.data(), h.vrows.data(), hd, scale, qs.pp.data(),
                            qs.op.data());
        for (int g = 0; g < n; ++g) qs.expect_single(g, h, ctxs[static_cast<size_t>(g)], hd, scale);
        // Without probs (only the heatmap capture asks for them) the outputs are the same bits.
        Queries bare(n, hd, cmax, static_cast<uint32_t>(n * 17 + cmax));
        cpu::attend_queries(n, bare.qp.data(), ctxs.data(), h.krows.data(), h.vrows.data(), hd, scale, nullptr,
                            bare.op.data());
        for (int g = 0; g < n; ++g) EXPECT_EQ(qs.out[g], bare.out[g]) << "query " << g << " without probs";
      }
    }
  }
}

}  // namespace
}  // namespace llmwb
