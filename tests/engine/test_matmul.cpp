// test_matmul.cpp — every SIMD path of matmul() against the plain double-precision reference.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/matmul.h"
#include "backend/cpu/qmatmul.h"
#include "llmwb/errors.h"
#include "support/simd_levels.h"

namespace llmwb {
namespace {

using cpu::SimdLevel;

// A weight matrix of random values stored in `dtype`, placed `misalign` bytes past an aligned
// address, as rows in a mapped file may be.
struct Weights {
  std::vector<uint8_t> storage;
  TensorView view;

  Weights(DType dtype, int64_t rows, int64_t cols, uint32_t seed, int misalign = 0) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const uint64_t rb = dtype_row_bytes(dtype, cols);
    storage.resize(rb * rows + 64);
    std::vector<float> row(static_cast<size_t>(cols));
    uint8_t* base = storage.data() + misalign;
    for (int64_t r = 0; r < rows; ++r) {
      for (float& v : row) v = nd(rng);
      quantize_row(dtype, row.data(), base + r * rb, cols);
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
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v) f = u(rng);
  return v;
}

// Error bound of a float dot product of length K: K * eps * sum |w x| (Higham, ch. 3).
std::vector<float> abs_sums(const TensorView& W, const std::vector<float>& x, int64_t T) {
  const int64_t N = W.rows(), K = W.cols();
  std::vector<float> row(static_cast<size_t>(K)), s(static_cast<size_t>(N * T));
  for (int64_t o = 0; o < N; ++o) {
    dequantize_row(W.dtype, W.row(o), row.data(), K);
    for (int64_t t = 0; t < T; ++t) {
      double a = 0;
      for (int64_t k = 0; k < K; ++k) a += std::fabs(static_cast<double>(row[k]) * x[t * K + k]);
      s[t * N + o] = static_cast<float>(a);
    }
  }
  return s;
}

using test::available_levels;
using test::SimdLevelGuard;

void expect_matches_reference(ThreadPool& pool, SimdLevel level, DType dt, int64_t N, int64_t K, int64_t T,
                              uint32_t seed, int misalign = 0) {
  Weights w(dt, N, K, seed, misalign);
  std::vector<float> x = random_vector(static_cast<size_t>(T * K), seed + 1);
  // Quantized weights are multiplied with activations quantized per block of 32 (qmatmul.h,
  // tested in test_qmatmul.cpp): the reference takes the same rounded activations.
  if (cpu::qmatmul_handles(dt)) {
    for (int64_t t = 0; t < T; ++t) cpu::qmatmul_activation_roundtrip(x.data() + t * K, K, x.data() + t * K);
  }
  std::vector<float> ref(static_cast<size_t>(T * N)), got(static_cast<size_t>(T * N), NAN), scalar(ref.size());
  cpu::matmul_reference(w.view, x.data(), T, ref.data());
  {
    SimdLevelGuard g(SimdLevel::Scalar);
    cpu::matmul(pool, w.view, x.data(), T, scalar.data());
  }
  {
    SimdLevelGuard g(level);
    cpu::matmul(pool, w.view, x.data(), T, got.data());
  }
  const std::vector<float> bound = abs_sums(w.view, x, T);
  const float eps = static_cast<float>(K + 2) * FLT_EPSILON;
  for (size_t i = 0; i < ref.size(); ++i) {
    const float tol = eps * bound[i] + 1e-30f;
    ASSERT_LE(std::fabs(got[i] - ref[i]), tol)
        << cpu::simd_level_name(level) << " " << dtype_name(dt) << " N=" << N << " K=" << K << " T=" << T
        << " token " << i / N << " row " << i % N;
    ASSERT_LE(std::fabs(got[i] - scalar[i]), 2 * tol) << "vs scalar: " << cpu::simd_level_name(level);
  }
}

TEST(Matmul, EverySimdLevelMatchesTheReferenceForFloatWeights) {
  ThreadPool pool(2);
  uint32_t seed = 1;
  for (SimdLevel level : available_levels()) {
    for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
      for (int64_t N : {1, 5, 13, 40}) {
        for (int64_t K : {1, 7, 16, 33, 100, 257}) {
          for (int64_t T : {1, 2, 3, 4, 5, 9, 16, 17, 31, 33, 70}) {
            expect_matches_reference(pool, level, dt, N, K, T, seed++);
          }
        }
      }
    }
  }
}

TEST(Matmul, EverySimdLevelMatchesTheReferenceForQuantizedWeights) {
  ThreadPool pool(2);
  uint32_t seed = 1000;
  for (SimdLevel level : available_levels()) {
    for (DType dt : {DType::Q8_0, DType::Q4_0}) {
      for (int64_t N : {1, 6, 13, 29}) {
        for (int64_t K : {32, 64, 96, 544}) {
          for (int64_t T : {1, 2, 3, 4, 5, 8, 15, 16, 17, 32, 47, 64, 70}) {
            expect_matches_reference(pool, level, dt, N, K, T, seed++);
          }
        }
      }
    }
  }
}

// Past one k-block (K > 512) the tiled kernel carries partial sums between k-blocks; past 512
// tokens it makes more than one pass over the packed activations; past 192 rows per thread
// it works through more than one row block.
TEST(Matmul, TiledPathHandlesSeveralKBlocksAndTokenPasses) {
  ThreadPool pool(2);
  for (SimdLevel level : available_levels()) {
    expect_matches_reference(pool, level, DType::F32, 27, 1100, 40, 77);
    expect_matches_reference(pool, level, DType::F16, 14, 1037, 19, 78);
    expect_matches_reference(pool, level, DType::Q4_0, 30, 1088, 33, 79);
    expect_matches_reference(pool, level, DType::Q8_0, 13, 640, 530, 80);
    expect_matches_reference(pool, level, DType::F16, 437, 96, 21, 81);
    expect_matches_reference(pool, level, DType::BF16, 401, 600, 70, 82);
  }
}

TEST(Matmul, UnalignedWeightRowsAreRead) {
  ThreadPool pool(2);
  for (SimdLevel level : available_levels()) {
    expect_matches_reference(pool, level, DType::F32, 9, 70, 1, 5, 4);
    expect_matches_reference(pool, level, DType::F32, 9, 70, 40, 6, 4);
    expect_matches_reference(pool, level, DType::F16, 9, 70, 3, 7, 2);
    expect_matches_reference(pool, level, DType::BF16, 9, 70, 20, 8, 6);
  }
}

TEST(Matmul, ResultsDoNotDependOnTheThreadCount) {
  Weights w(DType::F16, 150, 96, 11);
  const std::vector<float> x = random_vector(96 * 37, 12);
  for (int64_t T : {1, 37}) {
    std::vector<float> y1(static_cast<size_t>(150 * T)), y3(y1.size());
    ThreadPool one(1), three(3);
    cpu::matmul(one, w.view, x.data(), T, y1.data());
    cpu::matmul(three, w.view, x.data(), T, y3.data());
    // Each output is computed by exactly one thread with the same kernel: bitwise equal.
    EXPECT_EQ(y1, y3) << "T=" << T;
  }
}

// Every weight type the engine knows (DType values up to the first dtype_info rejects), so
// that types added later are covered too: those the kernels do not decode natively go
// through matmul's dequantize_row path, which must be batch-invariant as well.
std::vector<DType> all_dtypes() {
  std::vector<DType> out;
  for (int i = 0; i < 256; ++i) {
    try {
      dtype_info(static_cast<DType>(i));
    } catch (const Error&) {
      break;
    }
    out.push_back(static_cast<DType>(i));
  }
  return out;
}

// Weights of `dt` if rows of `cols` can be stored and written in it, else null (read-only
// types such as GGUF k-quants, or cols not a whole number of blocks).
std::unique_ptr<Weights> try_weights(DType dt, int64_t rows, int64_t cols, uint32_t seed) {
  try {
    return std::make_unique<Weights>(dt, rows, cols, seed);
  } catch (const Error&) {
    return nullptr;
  }
}

// y[t] of token t computed alone (n_tokens = 1), for every token of x.
std::vector<float> each_token_alone(ThreadPool& pool, const TensorView& W, const std::vector<float>& x, int64_t T) {
  const int64_t N = W.rows(), K = W.cols();
  std::vector<float> y(static_cast<size_t>(T * N));
  for (int64_t t = 0; t < T; ++t) cpu::matmul(pool, W, x.data() + t * K, 1, y.data() + t * N);
  return y;
}

// Batched and sequential decoding give identical greedy tokens only if every output is
// bitwise the same whatever the batch: the GEMV (few tokens) and the tiled GEMM (many) must
// sum in one order, and a token's place in the batch must not matter.
TEST(Matmul, EveryTokenIsBitwiseTheSameAloneAndInAnyBatch) {
  ThreadPool pool(2);
  constexpr int64_t kTokens = 530, N = 53;   // more rows than one gemm row block, odd edges
  std::vector<int64_t> sizes;
  for (int64_t n = 1; n <= 70; ++n) sizes.push_back(n);
  sizes.push_back(100);
  sizes.push_back(kTokens);
  int checked = 0;
  for (SimdLevel level : available_levels()) {
    SimdLevelGuard g(level);
    for (DType dt : all_dtypes()) {
      for (int64_t K : {100, 256}) {
        const auto w = try_weights(dt, N, K, 100 + static_cast<uint32_t>(dt));
        if (!w) continue;
        const std::vector<float> x = random_vector(static_cast<size_t>(kTokens * K), 7);
        const std::vector<float> alone = each_token_alone(pool, w->view, x, kTokens);
        std::vector<float> y(alone.size());
        for (int64_t n : sizes) {
          // Batches starting at token 0 and, so that each token also sits at another index,
          // at token kTokens - n.
          for (int64_t first : {int64_t{0}, kTokens - n}) {
            cpu::matmul(pool, w->view, x.data() + first * K, n, y.data());
            for (int64_t t = 0; t < n; ++t) {
              ASSERT_EQ(std::memcmp(y.data() + t * N, alone.data() + (first + t) * N, sizeof(float) * N), 0)
                  << cpu::simd_level_name(level) << " " << dtype_name(dt) << " K=" << K << " batch of " << n
                  << " from token " << first << ": token " << first + t << " differs from it alone";
            }
          }
        }
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 5) << "every built-in dtype must have been checked";
}

// Long rows: several k-chunks of the tiled kernel with a column tail, several row blocks.
TEST(Matmul, LongRowsAreBitwiseTheSameAloneAndInABatch) {
  ThreadPool pool(2);
  for (SimdLevel level : available_levels()) {
    SimdLevelGuard g(level);
    for (DType dt : {DType::F32, DType::F16, DType::Q8_0}) {
      // Three k-chunks of the AVX-512 kernel (kGemmKc = 1024), five of the AVX2 one.
      const int64_t K = dt == DType::Q8_0 ? 2208 : 2211, N = 101, T = 75;
      Weights w(dt, N, K, 21);
      const std::vector<float> x = random_vector(static_cast<size_t>(T * K), 22);
      const std::vector<float> alone = each_token_alone(pool, w.view, x, T);
      std::vector<float> y(alone.size());
      cpu::matmul(pool, w.view, x.data(), T, y.data());
      EXPECT_EQ(y, alone) << cpu::simd_level_name(level) << " " << dtype_name(dt);
    }
  }
}

// Each output is computed by one thread, with one summation order whichever thread it is.
TEST(Matmul, BatchResultsDoNotDependOnTheThreadCount) {
  ThreadPool one(1), two(2), three(3);
  constexpr int64_t N = 600, K = 256;   // enough rows to split even a single-token call
  for (SimdLevel level : available_levels()) {
    SimdLevelGuard g(level);
    for (DType dt : all_dtypes()) {
      const auto w = try_weights(dt, N, K, 31);
      if (!w) continue;
      const std::vector<float> x = random_vector(static_cast<size_t>(100 * K), 32);
      for (int64_t T : {1, 5, 37, 100}) {
        std::vector<float> y1(static_cast<size_t>(N * T)), y2(y1.size()), y3(y1.size());
        cpu::matmul(one, w->view, x.data(), T, y1.data());
        cpu::matmul(two, w->view, x.data(), T, y2.data());
        cpu::matmul(three, w->view, x.data(), T, y3.data());
        EXPECT_EQ(std::memcmp(y1.data(), y2.data(), sizeof(float) * y1.size()), 0)
            << cpu::simd_level_name(level) << " " << dtype_name(dt) << " T=" << T << ": 1 vs 2 threads";
        EXPECT_EQ(std::memcmp(y1.data(), y3.data(), sizeof(float) * y1.size()), 0)
            << cpu::simd_level_name(level) << " " << dtype_name(dt) << " T=" << T << ": 1 vs 3 threads";
      }
    }
  }
}

// Weight types without a native kernel are decoded with dequantize_row and are as accurate.
TEST(Matmul, EveryKnownDtypeMatchesTheReferenceWithOrWithoutANativeKernel) {
  ThreadPool pool(2);
  for (SimdLevel level : available_levels()) {
    for (DType dt : all_dtypes()) {
      if (!try_weights(dt, 1, 256, 1)) continue;
      for (int64_t T : {1, 3, 40}) expect_matches_reference(pool, level, dt, 57, 256, T, 40 + static_cast<uint32_t>(T));
    }
  }
}

TEST(Matmul, ZeroTokensWritesNothing) {
  ThreadPool pool(2);
  Weights w(DType::F32, 4, 8, 1);
  float y = 42.0f;
  cpu::matmul(pool, w.view, nullptr, 0, &y);
  EXPECT_EQ(y, 42.0f);
}

TEST(Matmul, WeightsShorterThanTheirShapeAreAnError) {
  ThreadPool pool(1);
  Weights w(DType::F32, 4, 8, 1);
  w.view.nbytes -= 4;
  std::vector<float> x(8), y(4);
  EXPECT_THROW(cpu::matmul(pool, w.view, x.data(), 1, y.data()), Error);
}

TEST(Matmul, SimdLevelCanBeLoweredButNotRaisedAboveTheCpu) {
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl");
  const SimdLevel saved = cpu::simd_level();
  cpu::set_simd_level(SimdLevel::Scalar);
  EXPECT_EQ(cpu::simd_level(), SimdLevel::Scalar);
  cpu::set_simd_level(SimdLevel::Avx512);
  EXPECT_EQ(cpu::simd_level(), avx512 ? SimdLevel::Avx512 : avx2 ? SimdLevel::Avx2 : SimdLevel::Scalar);
  cpu::set_simd_level(SimdLevel::Avx2);
  EXPECT_EQ(cpu::simd_level(), avx2 ? SimdLevel::Avx2 : SimdLevel::Scalar);
  EXPECT_STREQ(cpu::simd_level_name(SimdLevel::Avx512), "avx512");
  cpu::set_simd_level(saved);
}

}  // namespace
}  // namespace llmwb
