// The f16 KV cache (--kv-dtype f16): the stored element is x rounded to the nearest half (ties
// to even, beyond +-65504 saturated, NaN kept), copy-on-write copies the bits, the pool takes
// half the bytes, the row conversion is exact at every SIMD level, and paged attention over
// f16 K/V equals attention over an f32 pool holding the same (rounded) values bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/ops.h"
#include "kv/kv_cache.h"
#include "request/forward_batch.h"
#include "format/tensor.h"

using namespace llmwb;

namespace {

constexpr int kLayers = 2, kBlocks = 6, kBs = 8, kHeads = 3, kHd = 32, kKvDim = kHeads * kHd;

float stored(float x) {   // what one element of an f16 pool reads back as
  KVCache c(1, 1, 1, 1, 1, KVDType::F16);
  c.store(0, 0, &x, &x);
  float k, v;
  c.load(0, 0, &k, &v);
  EXPECT_EQ(std::memcmp(&k, &v, 4), 0);
  return k;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(KvF16, ElementsRoundToNearestEvenHalf) {
  EXPECT_EQ(stored(1.0f), 1.0f);
  EXPECT_EQ(stored(-2.5f), -2.5f);
  // Ties between neighbouring halves (spacing 2^-10 in [1, 2)) go to the even mantissa.
  EXPECT_EQ(stored(1.0f + 0x1p-11f), 1.0f);
  EXPECT_EQ(stored(1.0f + 3 * 0x1p-11f), 1.0f + 0x1p-9f);
  // Just above a tie rounds up.
  EXPECT_EQ(stored(std::nextafter(1.0f + 0x1p-11f, 2.0f)), 1.0f + 0x1p-10f);
  // Subnormal halves are exact multiples of 2^-24; below 2^-25 is zero.
  EXPECT_EQ(stored(3 * 0x1p-24f), 3 * 0x1p-24f);
  EXPECT_EQ(stored(0x1p-26f), 0.0f);
  EXPECT_EQ(bits(stored(-0.0f)), bits(-0.0f));   // the sign of zero is kept
  EXPECT_EQ(stored(0.1f), fp16_to_fp32(fp32_to_fp16(0.1f)));
}

TEST(KvF16, OutOfRangeSaturatesAndNanStaysNan) {
  // IEEE rounding would make 65520 and up inf, and one inf key turns its row's scores into NaN:
  // the pool saturates at the largest finite half instead.
  EXPECT_EQ(stored(65504.0f), 65504.0f);
  EXPECT_EQ(stored(65519.0f), 65504.0f);
  EXPECT_EQ(stored(65520.0f), 65504.0f);
  EXPECT_EQ(stored(1e9f), 65504.0f);
  EXPECT_EQ(stored(-1e9f), -65504.0f);
  EXPECT_EQ(stored(std::numeric_limits<float>::infinity()), 65504.0f);
  EXPECT_EQ(stored(-std::numeric_limits<float>::infinity()), -65504.0f);
  EXPECT_TRUE(std::isnan(stored(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(kv_half(70000.0f), 0x7BFF);
}

TEST(KvF16, RelativeErrorIsAtMostHalfAnUlpAndSlotsAreIndependent) {
  KVCache c(kLayers, kBlocks, kBs, kHeads, kHd, KVDType::F16);
  std::mt19937 rng(3);
  std::normal_distribution<float> g(0.0f, 4.0f);
  const int n = kBlocks * kBs;
  std::vector<std::vector<float>> ks, vs;
  for (int t = 0; t < n; ++t) {
    ks.emplace_back(kKvDim);
    vs.emplace_back(kKvDim);
    for (float& x : ks.back()) x = g(rng);
    for (float& x : vs.back()) x = g(rng);
    for (int l = 0; l < kLayers; ++l) c.store(l, t, ks.back().data(), vs.back().data());
  }
  std::vector<float> k(kKvDim), v(kKvDim);
  for (int l = 0; l < kLayers; ++l) {
    for (int t = 0; t < n; ++t) {
      c.load(l, t, k.data(), v.data());
      for (int e = 0; e < kKvDim; ++e) {
        const float xk = ks[size_t(t)][size_t(e)], xv = vs[size_t(t)][size_t(e)];
        // Normal halves (|x| >= 2^-14): |x - h| <= 2^-11 |x|; below, half the subnormal step.
        ASSERT_LE(std::fabs(k[size_t(e)] - xk), std::max(0x1p-11f * std::fabs(xk), 0x1p-25f)) << l << " " << t;
        ASSERT_LE(std::fabs(v[size_t(e)] - xv), std::max(0x1p-11f * std::fabs(xv), 0x1p-25f)) << l << " " << t;
        ASSERT_EQ(c.k16(l, t)[e], fp32_to_fp16(xk));
      }
    }
  }
}

TEST(KvF16, CopyBlockCopiesTheHalves) {
  KVCache c(kLayers, kBlocks, kBs, kHeads, kHd, KVDType::F16);
  std::mt19937 rng(4);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> row(kKvDim);
  for (int t = 0; t < 2 * kBs + 3; ++t) {   // block 2 holds 3 tokens
    for (float& x : row) x = g(rng);
    for (int l = 0; l < kLayers; ++l) c.store(l, t, row.data(), row.data());
  }
  c.copy_block(2, 5);
  for (int l = 0; l < kLayers; ++l) {
    for (int o = 0; o < kBs; ++o) {
      EXPECT_EQ(std::memcmp(c.k16(l, 2 * kBs + o), c.k16(l, 5 * kBs + o), kKvDim * 2), 0) << l << " " << o;
      EXPECT_EQ(std::memcmp(c.v16(l, 2 * kBs + o), c.v16(l, 5 * kBs + o), kKvDim * 2), 0) << l << " " << o;
    }
  }
}

TEST(KvF16, PoolBytesAreHalfOfF32) {
  const uint64_t f32 = KVCache::bytes_per_block(22, 16, 4, 64, KVDType::F32);   // TinyLlama
  EXPECT_EQ(KVCache::bytes_per_block(22, 16, 4, 64, KVDType::F16) * 2, f32);
  KVCache c(22, 10, 16, 4, 64, KVDType::F16);
  EXPECT_EQ(c.total_bytes() * 2, 10 * f32);
  KVDType t;
  EXPECT_TRUE(kv_dtype_from_name("f16", &t));
  EXPECT_EQ(t, KVDType::F16);
  EXPECT_STREQ(kv_dtype_name(KVDType::F16), "f16");
}

// f16_to_f32 at every SIMD level this CPU has is the exact conversion, for every half (all
// 65536 bit patterns: zeros, subnormals, normals, infinities; NaNs stay NaN) and
// lengths with and without a SIMD tail.
TEST(KvF16, RowConversionIsExactAtEverySimdLevel) {
  const cpu::SimdLevel saved = cpu::simd_level();
  std::vector<uint16_t> all(65536 + 7);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i * 40503u);   // odd: a permutation
  std::vector<uint32_t> ref(all.size());
  for (size_t i = 0; i < all.size(); ++i) ref[i] = bits(fp16_to_fp32(all[i]));
  for (cpu::SimdLevel lvl : {cpu::SimdLevel::Scalar, cpu::SimdLevel::Avx2, cpu::SimdLevel::Avx512}) {
    if (static_cast<int>(lvl) > static_cast<int>(cpu::best_simd_level())) continue;
    cpu::set_simd_level(lvl);
    for (int64_t n : {int64_t(1), int64_t(7), int64_t(31), int64_t(all.size())}) {
      std::vector<float> out(static_cast<size_t>(n), -1.0f);
      cpu::f16_to_f32(all.data(), out.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const float r = fp16_to_fp32(all[size_t(i)]);
        if (std::isnan(r))   // vcvtph2ps sets a signalling NaN's quiet bit; NaN stays NaN either way
          ASSERT_TRUE(std::isnan(out[size_t(i)])) << cpu::simd_level_name(lvl) << " half " << all[size_t(i)];
        else
          ASSERT_EQ(bits(out[size_t(i)]), ref[size_t(i)]) << cpu::simd_level_name(lvl) << " half " << all[size_t(i)];
      }
    }
  }
  cpu::set_simd_level(saved);
}

// Paged attention over an f16 pool against attention over an f32 pool that holds the same
// values (each element rounded to half first): the f16 rows are converted exactly and run
// through the f32 kernels, so the outputs and the heatmap weights are bit for bit the same.
// Against the unrounded f32 pool the error is f16's (~2^-11 relative per element).
TEST(KvF16, AttentionEqualsF32AttentionOfTheRoundedValues) {
  const int n_heads = 6;   // 2 query heads per kv head
  const int ctx = 4 * kBs + 5;
  KVCache h(kLayers, kBlocks, kBs, kHeads, kHd, KVDType::F16), fr(kLayers, kBlocks, kBs, kHeads, kHd, KVDType::F32),
      f(kLayers, kBlocks, kBs, kHeads, kHd, KVDType::F32);
  const std::vector<int> table{3, 0, 5, 1, 4};   // out of order, as the block manager hands them out
  std::mt19937 rng(9);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> k(kKvDim), v(kKvDim), kr(kKvDim), vr(kKvDim);
  for (int pos = 0; pos < ctx; ++pos) {
    for (float& x : k) x = g(rng);
    for (float& x : v) x = g(rng);
    const int64_t slot = int64_t(table[size_t(pos / kBs)]) * kBs + pos % kBs;
    h.store(1, slot, k.data(), v.data());
    f.store(1, slot, k.data(), v.data());
    h.load(1, slot, kr.data(), vr.data());
    fr.store(1, slot, kr.data(), vr.data());
  }
  ForwardBatch batch;   // the last 3 positions as queries of one sequence
  batch.tokens = {0, 0, 0};
  ForwardSeq s;
  s.n_tokens = 3;
  s.start_pos = ctx - 3;
  s.block_table = &table;
  batch.seqs.push_back(s);
  AttentionParams p;
  p.n_heads = n_heads;
  p.n_kv_heads = kHeads;
  p.head_dim = kHd;
  p.scale = 1.0f / std::sqrt(float(kHd));
  std::vector<float> q(size_t(3 * n_heads * kHd));
  for (float& x : q) x = 0.3f * g(rng);
  std::vector<float> out_h(q.size()), out_r(q.size()), out_f(q.size());
  CpuBackend be(2);
  AttentionRecord rec_h, rec_r;
  batch.seqs[0].capture_attention = true;
  be.attention(h, 1, batch, q.data(), p, out_h.data(), &rec_h);
  be.attention(fr, 1, batch, q.data(), p, out_r.data(), &rec_r);
  be.attention(f, 1, batch, q.data(), p, out_f.data(), nullptr);
  double d_r = 0, d_f = 0, ref2 = 0;
  for (size_t e = 0; e < q.size(); ++e) {
    ASSERT_TRUE(std::isfinite(out_h[e]));
    d_r = std::max(d_r, std::fabs(double(out_h[e]) - out_r[e]));
    d_f += (double(out_h[e]) - out_f[e]) * (double(out_h[e]) - out_f[e]);
    ref2 += double(out_f[e]) * out_f[e];
  }
  const double rel_f = std::sqrt(d_f / ref2);
  std::printf("f16 vs f32 attention: max |diff| vs the rounded values %.3g, relative RMS vs unrounded %.3g\n", d_r,
              rel_f);
  EXPECT_EQ(d_r, 0.0);
  EXPECT_LT(rel_f, 2e-3);
  EXPECT_GT(rel_f, 0.0);   // the pools really differ
  // The heatmap's weights are recorded from the f16 path too.
  ASSERT_EQ(rec_h.rows.size(), rec_r.rows.size());
  for (size_t r = 0; r < rec_h.rows.size(); ++r) {
    ASSERT_EQ(rec_h.rows[r].size(), rec_r.rows[r].size()) << r;
    EXPECT_EQ(rec_h.rows[r], rec_r.rows[r]) << r;
  }
}

}  // namespace
