// test_qmatmul.cpp — the integer-dot kernels for quantized weights (backend/cpu/qmatmul.h):
// every dtype at every SIMD level against dequantize(W) . dequantize(quantize(x)), against the
// float product within the activation quantization error, against the scalar level, and
// bitwise batch invariance. The QMatmulRepacked tests run the same checks over the 4-bit
// types' row-interleaved copies (backend/cpu/qrepack.h, qmatmul_packed).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/matmul.h"
#include "backend/cpu/qmatmul.h"
#include "backend/cpu/qrepack.h"
#include "llmwb/errors.h"
#include "support/simd_levels.h"

namespace llmwb {
namespace {

using cpu::SimdLevel;

const std::vector<DType> kQTypes = {DType::INT8_ROW, DType::INT8_ASYM_ROW, DType::INT4_G32, DType::Q8_0,
                                    DType::Q4_0,     DType::INT4_G128,     DType::Q6_K,     DType::Q4_K,
                                    DType::Q5_K,     DType::Q4_1};

void store_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

// Random weights in `dtype`, `misalign` bytes past an aligned address. Types with a quantizer
// quantize normal values; the read-only k-quants get random bytes with finite scales.
struct QWeights {
  std::vector<uint8_t> storage;
  TensorView view;

  QWeights(DType dtype, int64_t rows, int64_t cols, uint32_t seed, int misalign = 0) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const uint64_t rb = dtype_row_bytes(dtype, cols);
    storage.resize(rb * rows + 64);
    uint8_t* base = storage.data() + misalign;
    if (dtype_can_quantize(dtype)) {
      std::vector<float> row(static_cast<size_t>(cols));
      for (int64_t r = 0; r < rows; ++r) {
        for (float& v : row) v = nd(rng);
        // Some rows with an offset, so that zero points and minimums are not all near zero.
        if (r % 3 == 1) for (float& v : row) v += 1.5f;
        quantize_row(dtype, row.data(), base + r * rb, cols);
      }
    } else {
      std::uniform_int_distribution<int> byte(0, 255);
      for (uint64_t i = 0; i < rb * rows; ++i) base[i] = static_cast<uint8_t>(byte(rng));
      const int bb = dtype_info(dtype).block_bytes;
      std::uniform_real_distribution<float> scale(0.001f, 0.05f);
      for (uint64_t off = 0; off < rb * rows; off += bb) {
        if (dtype == DType::Q6_K) {
          store_u16(base + off + 208, fp32_to_fp16(scale(rng)));
        } else {   // Q4_K, Q5_K: d, dmin
          store_u16(base + off, fp32_to_fp16(scale(rng)));
          store_u16(base + off + 2, fp32_to_fp16(scale(rng)));
        }
      }
    }
    view.name = "w";
    view.dtype = dtype;
    view.shape = {rows, cols};
    view.data = base;
    view.nbytes = rb * rows;
  }
};

std::vector<float> random_vector(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v) f = nd(rng);
  return v;
}

using test::available_levels;
using test::SimdLevelGuard;

// The types with a repacked copy (qrepack.h).
const std::vector<DType> kPackedTypes = {DType::INT4_G32, DType::INT4_G128, DType::Q4_0, DType::Q4_1,
                                         DType::Q8_0,     DType::Q4_K,      DType::Q5_K, DType::Q6_K};

// Which kernels product() runs: the in-place ones (cpu::matmul) or, for the 4-bit types, a
// fresh repacked copy (no cache: the test weights are freed and their addresses reused).
bool g_packed = false;

class PackedGuard {
 public:
  PackedGuard() { g_packed = true; }
  ~PackedGuard() { g_packed = false; }
  PackedGuard(const PackedGuard&) = delete;
  PackedGuard& operator=(const PackedGuard&) = delete;
};

void product(ThreadPool& pool, const TensorView& W, const float* x, int64_t T, float* y) {
  if (g_packed) {
    ASSERT_TRUE(cpu::repackable(W.dtype)) << dtype_name(W.dtype);
    cpu::qmatmul_packed(pool, *cpu::repack_q4(W, pool), x, T, y);
  } else {
    cpu::matmul(pool, W, x, T, y);
  }
}

int64_t smallest_k(DType dt) { return dt == DType::Q4_K || dt == DType::Q5_K || dt == DType::Q6_K ? 256 : 32; }

std::vector<int64_t> test_ks(DType dt) {
  const int64_t b = smallest_k(dt);
  std::vector<int64_t> ks = {b, 2 * b, 3 * b};
  if (dt == DType::Q4_0 || dt == DType::Q8_0 || dt == DType::Q4_1) ks.push_back(544);
  if (dtype_row_fits(dt, 33)) {   // any length: partial last blocks and groups
    for (int64_t k : {1, 5, 33, 100, 130, 300}) ks.push_back(k);
  }
  return ks;
}

struct Expected {
  std::vector<double> exact;    // dequantize(W) . dequantize(quantize(x)), in double
  std::vector<double> tol;      // float rounding of the kernel's sums
  std::vector<double> act_err;  // |dequantize(W)| . |x - dequantize(quantize(x))|
  std::vector<double> f32;      // dequantize(W) . x
};

Expected expected(const TensorView& W, const std::vector<float>& x, int64_t T) {
  const int64_t N = W.rows(), K = W.cols(), nb = (K + 31) / 32;
  Expected e;
  e.exact.resize(static_cast<size_t>(N * T));
  e.tol.resize(e.exact.size());
  e.act_err.resize(e.exact.size());
  e.f32.resize(e.exact.size());
  std::vector<float> w(static_cast<size_t>(K)), xh(static_cast<size_t>(T * K));
  for (int64_t t = 0; t < T; ++t) cpu::qmatmul_activation_roundtrip(x.data() + t * K, K, xh.data() + t * K);
  for (int64_t o = 0; o < N; ++o) {
    dequantize_row(W.dtype, W.row(o), w.data(), K);
    for (int64_t t = 0; t < T; ++t) {
      const float* xt = x.data() + t * K;
      const float* ht = xh.data() + t * K;
      double s = 0, f = 0, err = 0, mag = 0;
      for (int64_t b = 0; b < nb; ++b) {
        // Offsets (Q4_1 minimums, zero points) are summed apart from d q, so the rounding
        // scales with the block's largest weight rather than each weight.
        double wmax = 0, xabs = 0;
        for (int64_t k = b * 32; k < std::min(K, b * 32 + 32); ++k) {
          s += static_cast<double>(w[k]) * ht[k];
          f += static_cast<double>(w[k]) * xt[k];
          err += std::fabs(static_cast<double>(w[k]) * (xt[k] - ht[k]));
          wmax = std::max(wmax, std::fabs(static_cast<double>(w[k])));
          xabs += std::fabs(static_cast<double>(ht[k]));
        }
        mag += wmax * xabs;
      }
      const size_t i = static_cast<size_t>(t * N + o);
      e.exact[i] = s;
      e.f32[i] = f;
      e.act_err[i] = err;
      e.tol[i] = 4.0 * static_cast<double>(nb + 16) * FLT_EPSILON * mag + 1e-30;
    }
  }
  return e;
}

std::vector<float> run(ThreadPool& pool, SimdLevel level, const TensorView& W, const std::vector<float>& x,
                       int64_t T) {
  SimdLevelGuard g(level);
  std::vector<float> y(static_cast<size_t>(T * W.rows()), NAN);   // poisoned: every output must be written
  product(pool, W, x.data(), T, y.data());
  return y;
}

void expect_matches(ThreadPool& pool, DType dt, int64_t N, int64_t K, int64_t T, uint32_t seed, int misalign = 0) {
  QWeights w(dt, N, K, seed, misalign);
  const std::vector<float> x = random_vector(static_cast<size_t>(T * K), seed + 1);
  const Expected e = expected(w.view, x, T);
  const std::vector<float> scalar = run(pool, SimdLevel::Scalar, w.view, x, T);
  for (SimdLevel level : available_levels()) {
    const std::vector<float> y = level == SimdLevel::Scalar ? scalar : run(pool, level, w.view, x, T);
    for (size_t i = 0; i < y.size(); ++i) {
      const std::string where = std::string(cpu::simd_level_name(level)) + " " + dtype_name(dt) +
                                " N=" + std::to_string(N) + " K=" + std::to_string(K) + " T=" + std::to_string(T) +
                                " token " + std::to_string(i / N) + " row " + std::to_string(i % N);
      ASSERT_TRUE(std::isfinite(y[i])) << where;
      ASSERT_LE(std::fabs(y[i] - e.exact[i]), e.tol[i]) << where << " (vs dequantize . dequantize)";
      ASSERT_LE(std::fabs(y[i] - e.f32[i]), e.act_err[i] + e.tol[i]) << where << " (vs the f32 product)";
      ASSERT_LE(std::fabs(y[i] - scalar[i]), 2 * e.tol[i]) << where << " (vs the scalar level)";
    }
  }
}

void every_dtype_matches(const std::vector<DType>& types) {
  ThreadPool pool(2);
  uint32_t seed = 1;
  for (DType dt : types) {
    for (int64_t K : test_ks(dt)) {
      for (int64_t N : {1, 3, 6, 13}) {
        for (int64_t T : {1, 2, 3, 4, 5, 7, 9, 17, 70}) expect_matches(pool, dt, N, K, T, seed++);
      }
    }
  }
}

void long_rows_match(const std::vector<DType>& types) {
  ThreadPool pool(2);
  for (DType dt : types) {
    const int64_t K = dt == DType::Q4_K || dt == DType::Q5_K || dt == DType::Q6_K ? 2048 : 2080;
    expect_matches(pool, dt, 37, K, 1, 500 + static_cast<uint32_t>(dt));
    expect_matches(pool, dt, 41, K, 21, 600 + static_cast<uint32_t>(dt));
  }
  // Long rows with a partial last block / group.
  for (DType dt : types) {
    if (dtype_row_fits(dt, 2083)) expect_matches(pool, dt, 29, 2083, 6, 700 + static_cast<uint32_t>(dt));
  }
}

void unaligned_rows_are_read(const std::vector<DType>& types) {
  ThreadPool pool(2);
  for (DType dt : types) {
    const int64_t K = smallest_k(dt) * 2;
    expect_matches(pool, dt, 9, K, 1, 40, 3);
    expect_matches(pool, dt, 9, K, 6, 41, 1);
  }
}

TEST(QMatmul, EveryDtypeAndSimdLevelMatchesTheDequantizedProduct) { every_dtype_matches(kQTypes); }
TEST(QMatmul, LongRowsAndManyRowsMatch) { long_rows_match(kQTypes); }
TEST(QMatmul, UnalignedWeightRowsAreRead) { unaligned_rows_are_read(kQTypes); }

TEST(QMatmulRepacked, EveryDtypeAndSimdLevelMatchesTheDequantizedProduct) {
  PackedGuard p;
  every_dtype_matches(kPackedTypes);
}
TEST(QMatmulRepacked, LongRowsAndManyRowsMatch) {
  PackedGuard p;
  long_rows_match(kPackedTypes);
}
TEST(QMatmulRepacked, UnalignedWeightRowsAreRead) {
  PackedGuard p;
  unaligned_rows_are_read(kPackedTypes);
}

TEST(QMatmul, ActivationsAreQuantizedPerBlockOf32WithinHalfAStep) {
  std::vector<float> x = random_vector(100, 5);
  x[40] = 30.0f;   // an outlier only coarsens its own block
  std::vector<float> r(x.size());
  cpu::qmatmul_activation_roundtrip(x.data(), 100, r.data());
  for (size_t b = 0; b < 4; ++b) {
    float amax = 0;
    for (size_t k = b * 32; k < std::min<size_t>(100, b * 32 + 32); ++k) amax = std::max(amax, std::fabs(x[k]));
    for (size_t k = b * 32; k < std::min<size_t>(100, b * 32 + 32); ++k) {
      EXPECT_LE(std::fabs(r[k] - x[k]), amax / 127.0f * 0.5f * (1 + 1e-5f)) << "element " << k;
    }
  }
  EXPECT_EQ(r[40], 30.0f);
}

// y[t] of token t computed alone, for every token of x.
std::vector<float> each_token_alone(ThreadPool& pool, const TensorView& W, const std::vector<float>& x, int64_t T) {
  const int64_t N = W.rows(), K = W.cols();
  std::vector<float> y(static_cast<size_t>(T * N));
  for (int64_t t = 0; t < T; ++t) product(pool, W, x.data() + t * K, 1, y.data() + t * N);
  return y;
}

void batch_invariant(const std::vector<DType>& types) {
  ThreadPool pool(2);
  constexpr int64_t kTokens = 90, N = 53;   // rows not a multiple of any tile
  for (SimdLevel level : available_levels()) {
    SimdLevelGuard g(level);
    for (DType dt : types) {
      std::vector<int64_t> ks = {smallest_k(dt) * 3};
      if (dtype_row_fits(dt, 33)) ks.push_back(300);
      for (int64_t K : ks) {
        QWeights w(dt, N, K, 100 + static_cast<uint32_t>(dt));
        const std::vector<float> x = random_vector(static_cast<size_t>(kTokens * K), 7);
        const std::vector<float> alone = each_token_alone(pool, w.view, x, kTokens);
        std::vector<float> y(alone.size());
        for (int64_t n = 1; n <= kTokens; n += n < 12 ? 1 : 7) {
          for (int64_t first : {int64_t{0}, kTokens - n}) {
            std::fill(y.begin(), y.end(), NAN);
            product(pool, w.view, x.data() + first * K, n, y.data());
            for (int64_t t = 0; t < n; ++t) {
              ASSERT_EQ(std::memcmp(y.data() + t * N, alone.data() + (first + t) * N, sizeof(float) * N), 0)
                  << cpu::simd_level_name(level) << " " << dtype_name(dt) << " K=" << K << " batch of " << n
                  << " from token " << first << ": token " << first + t << " differs from it alone";
            }
          }
        }
      }
    }
  }
}

void thread_invariant(const std::vector<DType>& types) {
  ThreadPool one(1), two(2), three(3);
  constexpr int64_t N = 301;
  for (SimdLevel level : available_levels()) {
    SimdLevelGuard g(level);
    for (DType dt : types) {
      const int64_t K = smallest_k(dt) * 2;
      QWeights w(dt, N, K, 31);
      const std::vector<float> x = random_vector(static_cast<size_t>(40 * K), 32);
      for (int64_t T : {1, 5, 40}) {
        std::vector<float> y1(static_cast<size_t>(N * T)), y2(y1.size()), y3(y1.size());
        product(one, w.view, x.data(), T, y1.data());
        product(two, w.view, x.data(), T, y2.data());
        product(three, w.view, x.data(), T, y3.data());
        EXPECT_EQ(std::memcmp(y1.data(), y2.data(), sizeof(float) * y1.size()), 0)
            << cpu::simd_level_name(level) << " " << dtype_name(dt) << " T=" << T << ": 1 vs 2 threads";
        EXPECT_EQ(std::memcmp(y1.data(), y3.data(), sizeof(float) * y1.size()), 0)
            << cpu::simd_level_name(level) << " " << dtype_name(dt) << " T=" << T << ": 1 vs 3 threads";
      }
    }
  }
}

// Each level's quantizer must give the scalar one's bits (the repacked kernels' bitwise
// agreement between levels rests on it): random rows with partial last blocks, all-zero
// blocks, tiny and huge values, and values that land exactly on half steps (ties to even).
TEST(QMatmul, EveryLevelQuantizesActivationsBitwiseLikeTheScalarLevel) {
  for (int64_t K : {1, 5, 31, 32, 33, 64, 100, 2048, 2048 + 17}) {
    std::vector<float> x = random_vector(static_cast<size_t>(K), 77u + static_cast<uint32_t>(K));
    for (int64_t k = 0; k < K; ++k) {
      const int64_t b = k / 32;
      if (b % 6 == 1) x[static_cast<size_t>(k)] = 0.0f;                  // an all-zero block
      if (b % 6 == 2) x[static_cast<size_t>(k)] *= 1e-30f;               // tiny scale
      if (b % 6 == 3) x[static_cast<size_t>(k)] *= 1e30f;                // huge scale
      // d = 1 and the rest on half steps: x * (1 / d) ties, rounded to even
      if (b % 6 == 4) x[static_cast<size_t>(k)] = k % 32 == 0 ? 127.0f : 0.5f * static_cast<float>(k % 32 - 16);
      // amax ~1e-37: d = amax / 127 is denormal and 1 / d overflows; with exact zeros in the
      // block an infinite inverse would make 0 * inf = NaN
      if (b % 6 == 5) x[static_cast<size_t>(k)] = k % 3 == 0 ? 0.0f : x[static_cast<size_t>(k)] * 1e-37f;
    }
    const int64_t nb = (K + 31) / 32;
    auto quantize = [&](SimdLevel level, std::vector<int8_t>& q, std::vector<float>& dc) {
      SimdLevelGuard g(level);
      q.assign(static_cast<size_t>(nb * 32), 99);
      dc.assign(static_cast<size_t>(2 * nb + 1), -1.0f);
      cpu::qmatmul_quantize_row(x.data(), K, q.data(), dc.data(), dc.data() + nb, dc.data() + 2 * nb);
    };
    std::vector<int8_t> q0, q;
    std::vector<float> dc0, dc;
    quantize(SimdLevel::Scalar, q0, dc0);
    for (int64_t i = K; i < nb * 32; ++i) ASSERT_EQ(q0[static_cast<size_t>(i)], 0) << "K=" << K << " pad " << i;
    if (nb > 1) {
      ASSERT_EQ(dc0[1], 0.0f) << "K=" << K << ": the all-zero block has d = 0";
    }
    for (SimdLevel level : available_levels()) {
      quantize(level, q, dc);
      const std::string where = std::string(cpu::simd_level_name(level)) + " K=" + std::to_string(K);
      ASSERT_EQ(std::memcmp(q.data(), q0.data(), q.size()), 0) << where << ": int8 values";
      ASSERT_EQ(std::memcmp(dc.data(), dc0.data(), dc.size() * sizeof(float)), 0) << where << ": d, c, csum";
    }
  }
}

TEST(QMatmul, EveryTokenIsBitwiseTheSameAloneAndInAnyBatch) { batch_invariant(kQTypes); }
TEST(QMatmul, ResultsDoNotDependOnTheThreadCount) { thread_invariant(kQTypes); }
TEST(QMatmulRepacked, EveryTokenIsBitwiseTheSameAloneAndInAnyBatch) {
  PackedGuard p;
  batch_invariant(kPackedTypes);
}
TEST(QMatmulRepacked, ResultsDoNotDependOnTheThreadCount) {
  PackedGuard p;
  thread_invariant(kPackedTypes);
}

TEST(QMatmul, EveryQuantizedTypeIsRoutedAndFloatTypesAreNot) {
  for (DType dt : kQTypes) EXPECT_TRUE(cpu::qmatmul_handles(dt)) << dtype_name(dt);
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) EXPECT_FALSE(cpu::qmatmul_handles(dt)) << dtype_name(dt);
  ThreadPool pool(1);
  QWeights w(DType::F16, 2, 32, 1);
  std::vector<float> x(32), y(2);
  EXPECT_THROW(cpu::qmatmul(pool, w.view, x.data(), 1, y.data()), Error);
}

TEST(QMatmul, TheAvx512LevelUsesVnniWhenTheCpuHasIt) {
  __builtin_cpu_init();
  SimdLevelGuard g(SimdLevel::Avx512);
  if (cpu::simd_level() != SimdLevel::Avx512) GTEST_SKIP() << "no AVX-512 here";
  const bool vnni = __builtin_cpu_supports("avx512vnni");
  EXPECT_STREQ(cpu::qmatmul_kernel_name(), vnni ? "avx512vnni" : "avx2");
  EXPECT_STREQ(cpu::qmatmul_packed_kernel_name(), vnni ? "avx512vnni-x16" : "avx2-x16");
}

}  // namespace
}  // namespace llmwb
