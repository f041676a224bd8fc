// test_fpanel.cpp — the 16-row panels of float weights (fpanel.h): the layout, the panel GEMV
// and GEMM against the double reference and against the one summation order they promise, and
// the CPU backend's use of them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/fpanel.h"
#include "backend/cpu/fpanel_kernels.h"
#include "backend/cpu/matmul.h"
#include "llmwb/errors.h"

namespace llmwb {
namespace {

const DType kFloatTypes[] = {DType::F32, DType::F16, DType::BF16};

struct Weights {
  std::vector<uint8_t> storage;
  std::vector<float> decoded;   // the stored values, row by row
  TensorView view;
  Weights(DType dtype, int64_t rows, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const uint64_t rb = dtype_row_bytes(dtype, cols);
    storage.resize(rb * rows + 1);
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      for (float& v : row) v = nd(rng);
      quantize_row(dtype, row.data(), storage.data() + r * rb, cols);
    }
    view.name = "blk.0.ffn_up.weight";
    view.dtype = dtype;
    view.shape = {rows, cols};
    view.data = storage.data();
    view.nbytes = rb * rows;
    decoded.resize(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r) dequantize_row(dtype, view.row(r), decoded.data() + r * cols, cols);
  }
  float at(int64_t r, int64_t k) const { return decoded[static_cast<size_t>(r * view.cols() + k)]; }
};

std::vector<float> random_x(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = u(rng);
  return v;
}

#define SKIP_WITHOUT_PANELS()                                                       \
  if (!cpu::panel_kernels_active()) GTEST_SKIP() << "no AVX-512 here: the panel kernels never run"

TEST(FloatPanels, LayoutHoldsEveryElementAndZeroPadding) {
  if (!cpu::cpu_has_panel_kernels()) GTEST_SKIP() << "no AVX-512 here: no panels are built";
  ThreadPool pool(2);
  for (DType dt : kFloatTypes) {
    const Weights w(dt, 37, 45, 3);   // an odd column count: the 16-bit types' last column alone
    const cpu::FloatPanels p = cpu::pack_panels(w.view, pool);
    EXPECT_EQ(p.panels, 3);
    EXPECT_EQ(p.panel_bytes, 16u * 45u * (dt == DType::F32 ? 4u : 2u));
    for (int64_t r = 0; r < 37; ++r)
      for (int64_t k = 0; k < 45; ++k) ASSERT_EQ(cpu::panel_element(p, r, k), w.at(r, k)) << dtype_name(dt);
    for (int64_t r = 37; r < 48; ++r)
      for (int64_t k = 0; k < 45; ++k) ASSERT_EQ(cpu::panel_element(p, r, k), 0.0f) << "padding row " << r;
  }
}

TEST(FloatPanels, QuantizedTypesHaveNoPanelsAndTheErrorNamesTheTensor) {
  const Weights w(DType::Q8_0, 16, 64, 1);
  EXPECT_FALSE(cpu::panel_dtype(DType::Q8_0));
  try {
    (void)cpu::panel_layout(w.view);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blk.0.ffn_up.weight"), std::string::npos) << e.what();
  }
}

// Both kernels against the double reference, over shapes that cover partial panels, one and
// several k-chunks, partial token panels, several row blocks and the GEMV / GEMM switch.
TEST(FloatPanels, MatmulMatchesTheDoubleReference) {
  SKIP_WITHOUT_PANELS();
  ThreadPool pool(3);
  const int64_t chunk = cpu::fpanel::kKc;
  for (DType dt : kFloatTypes) {
    for (const auto& [N, K] : {std::pair<int64_t, int64_t>{1, 1}, {15, 7}, {16, 64}, {17, chunk + 1},
                               {100, 2 * chunk + 50}, {700, 96}}) {
      const Weights w(dt, N, K, static_cast<uint32_t>(N * 31 + K));
      const cpu::FloatPanels p = cpu::pack_panels(w.view, pool);
      for (int64_t T : {1, 5, 11, 12, 13, 30}) {
        const std::vector<float> x = random_x(T * K, static_cast<uint32_t>(T));
        std::vector<float> y(static_cast<size_t>(T * N), NAN), ref(y.size());
        cpu::panel_matmul(pool, p, x.data(), T, y.data());
        cpu::matmul_reference(w.view, x.data(), T, ref.data());
        for (int64_t t = 0; t < T; ++t) {
          for (int64_t o = 0; o < N; ++o) {
            double bound = 0.0;   // K * eps * sum |w x| (Higham), with headroom
            for (int64_t k = 0; k < K; ++k) bound += std::fabs(double(w.at(o, k)) * x[static_cast<size_t>(t * K + k)]);
            bound = 2.0 * double(K) * 6e-8 * bound + 1e-30;
            const size_t i = static_cast<size_t>(t * N + o);
            ASSERT_LE(std::fabs(double(y[i]) - ref[i]), bound)
                << dtype_name(dt) << " N=" << N << " K=" << K << " T=" << T << " t=" << t << " o=" << o;
          }
        }
      }
    }
  }
}

// The promise of fpanel.h, checked literally: every output is one fused multiply-add chain
// over k = 0 .. K - 1 from zero.
TEST(FloatPanels, EveryOutputIsOneFmaChainInColumnOrder) {
  SKIP_WITHOUT_PANELS();
  ThreadPool pool(2);
  const int64_t N = 40, K = 2 * cpu::fpanel::kKc + 17;
  for (DType dt : kFloatTypes) {
    const Weights w(dt, N, K, 9);
    const cpu::FloatPanels p = cpu::pack_panels(w.view, pool);
    for (int64_t T : {1, 3, 12, 25}) {
      const std::vector<float> x = random_x(T * K, 77);
      std::vector<float> y(static_cast<size_t>(T * N));
      cpu::panel_matmul(pool, p, x.data(), T, y.data());
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t o = 0; o < N; ++o) {
          float acc = 0.0f;
          for (int64_t k = 0; k < K; ++k) acc = std::fma(w.at(o, k), x[static_cast<size_t>(t * K + k)], acc);
          uint32_t a, b;
          std::memcpy(&a, &acc, 4);
          std::memcpy(&b, &y[static_cast<size_t>(t * N + o)], 4);
          ASSERT_EQ(a, b) << dtype_name(dt) << " T=" << T << " t=" << t << " o=" << o;
        }
      }
    }
  }
}

// Batch invariance: a token's outputs are bitwise the same alone (GEMV), in any batch (GEMV or
// GEMM, any position) and with any thread count; rows span several row blocks of the GEMM.
TEST(FloatPanels, EveryTokenIsBitwiseTheSameAloneAndInAnyBatch) {
  SKIP_WITHOUT_PANELS();
  ThreadPool one(1), three(3);
  const int64_t N = 700, K = cpu::fpanel::kKc + 200, T = 40;
  for (DType dt : kFloatTypes) {
    const Weights w(dt, N, K, 5);
    const cpu::FloatPanels p = cpu::pack_panels(w.view, one);
    const std::vector<float> x = random_x(T * K, 11);
    std::vector<float> alone(static_cast<size_t>(T * N));
    for (int64_t t = 0; t < T; ++t) cpu::panel_matmul(one, p, x.data() + t * K, 1, alone.data() + t * N);
    for (int64_t first : {int64_t{0}, int64_t{3}}) {
      for (int64_t n : {int64_t{2}, int64_t{12}, int64_t{13}, int64_t{37}}) {
        if (first + n > T) continue;
        for (ThreadPool* pool : {&one, &three}) {
          std::vector<float> y(static_cast<size_t>(n * N));
          cpu::panel_matmul(*pool, p, x.data() + first * K, n, y.data());
          ASSERT_EQ(std::memcmp(y.data(), alone.data() + first * N, sizeof(float) * y.size()), 0)
              << dtype_name(dt) << " first=" << first << " n=" << n << " threads=" << pool->size();
        }
      }
    }
  }
}

// The GEMV's software prefetch distance (TuningConfig::decode_prefetch) changes no bit.
TEST(FloatPanels, TheDecodePrefetchDistanceChangesNoBit) {
  SKIP_WITHOUT_PANELS();
  ThreadPool two(2);
  const cpu::DecodePrefetch before = cpu::decode_prefetch();
  const int64_t N = 300, K = 1000;
  for (DType dt : kFloatTypes) {
    const Weights w(dt, N, K, 6);
    const cpu::FloatPanels p = cpu::pack_panels(w.view, two);
    const std::vector<float> x = random_x(2 * K, 13);
    for (int64_t T : {int64_t{1}, int64_t{2}}) {
      std::vector<float> ref;
      for (int64_t ahead : {int64_t{1024}, int64_t{0}, int64_t{64}, int64_t{16384}}) {
        cpu::set_decode_prefetch({ahead, ahead});
        std::vector<float> y(static_cast<size_t>(T * N), NAN);
        cpu::panel_matmul(two, p, x.data(), T, y.data());
        if (ref.empty()) ref = y;
        EXPECT_EQ(std::memcmp(y.data(), ref.data(), sizeof(float) * y.size()), 0)
            << dtype_name(dt) << " T=" << T << " prefetch " << ahead;
      }
    }
  }
  cpu::set_decode_prefetch(before);
}

// The backend multiplies float weights over panels it builds once (prepare or first use), and
// LLMWB_FLOAT_PANELS=0 keeps them in place.
// The embedding lookup of a tied head reads its panel copy (the mapped rows were handed back):
// every row, padding lane or not, gives the file's values; an embedding without panels is read
// in place and gets none built.
TEST(FloatPanels, EmbeddingRowsFromThePanelsAreTheFilesValues) {
  if (!cpu::cpu_has_panel_kernels()) GTEST_SKIP() << "no AVX-512 here: no panels are built";
  for (DType dt : kFloatTypes) {
    const Weights w(dt, 37, 45, 5);
    const std::vector<int> tokens = {0, 36, 17, 15, 16, 36, 1};
    std::vector<float> plain(tokens.size() * 45), via_panels(plain.size(), -1.0f);
    CpuBackend be(2);
    be.embed(w.view, tokens.data(), static_cast<int>(tokens.size()), plain.data());
    EXPECT_EQ(be.repacked().size(), 0u) << "a lookup builds no panels";
    be.prepare(w.view);   // as the engine does for a tied output head
    be.embed(w.view, tokens.data(), static_cast<int>(tokens.size()), via_panels.data());
    for (size_t i = 0; i < tokens.size(); ++i)
      for (int64_t k = 0; k < 45; ++k) ASSERT_EQ(plain[i * 45 + size_t(k)], w.at(tokens[i], k)) << dtype_name(dt);
    EXPECT_EQ(via_panels, plain) << dtype_name(dt);
  }
}

TEST(FloatPanels, CpuBackendUsesPanelsUnlessTurnedOff) {
  SKIP_WITHOUT_PANELS();
  const int64_t N = 48, K = 100, T = 20;
  const Weights w(DType::F16, N, K, 21);
  const std::vector<float> x = random_x(T * K, 2);
  std::vector<float> via_backend(static_cast<size_t>(T * N)), panels(via_backend.size()), in_place(via_backend.size());
  {
    CpuBackend be(2);
    be.prepare(w.view);
    EXPECT_EQ(be.repacked().size(), 1u);
    EXPECT_EQ(be.repacked().bytes(), 3u * 16u * 100u * 2u);
    be.matmul(w.view, x.data(), static_cast<int>(T), via_backend.data());
    EXPECT_EQ(be.repacked().size(), 1u);
  }
  ThreadPool pool(2);
  cpu::panel_matmul(pool, cpu::pack_panels(w.view, pool), x.data(), T, panels.data());
  EXPECT_EQ(via_backend, panels);
  ::setenv("LLMWB_FLOAT_PANELS", "0", 1);
  {
    CpuBackend be(2);
    be.matmul(w.view, x.data(), static_cast<int>(T), via_backend.data());
    EXPECT_EQ(be.repacked().size(), 0u);
  }
  ::unsetenv("LLMWB_FLOAT_PANELS");
  cpu::matmul(pool, w.view, x.data(), T, in_place.data());
  EXPECT_EQ(via_backend, in_place);
}

// A value other than 0 or 1 says so on stderr (naming the variable and the value) and keeps
// the default, as LLMWB_SIMD does.
TEST(FloatPanels, AnUnknownSwitchValueIsReportedAndTheDefaultKept) {
  ::setenv("LLMWB_FLOAT_PANELS", "off", 1);
  testing::internal::CaptureStderr();
  const bool on = cpu::float_panels_enabled();
  const std::string err = testing::internal::GetCapturedStderr();
  ::setenv("LLMWB_FLOAT_PANELS", "1", 1);
  EXPECT_TRUE(cpu::float_panels_enabled());
  ::unsetenv("LLMWB_FLOAT_PANELS");
  EXPECT_TRUE(on);
  EXPECT_NE(err.find("LLMWB_FLOAT_PANELS: 'off'"), std::string::npos) << err;
}

}  // namespace
}  // namespace llmwb

namespace llmwb {
namespace {

// Q/K/V-style calls: x packed once, each output bitwise what its own call gives, through the
// backend too.
TEST(FloatPanels, SharedInputMatricesGiveWhatEachGivesAlone) {
  SKIP_WITHOUT_PANELS();
  ThreadPool pool(2);
  const int64_t K = 130;
  const Weights a(DType::F32, 64, K, 1), b(DType::F32, 24, K, 2), c(DType::BF16, 33, K, 3);
  const cpu::FloatPanels pa = cpu::pack_panels(a.view, pool), pb = cpu::pack_panels(b.view, pool),
                         pc = cpu::pack_panels(c.view, pool);
  for (int64_t T : {1, 5, 9, 12, 29}) {
    const std::vector<float> x = random_x(T * K, 5);
    std::vector<float> ya(static_cast<size_t>(T * 64)), yb(static_cast<size_t>(T * 24)), yc(static_cast<size_t>(T * 33));
    const cpu::PanelOut outs[] = {{&pa, ya.data()}, {&pb, yb.data()}, {&pc, yc.data()}};
    cpu::panel_matmul_multi(pool, outs, x.data(), T);
    for (const auto& [p, y] : {std::pair{&pa, &ya}, std::pair{&pb, &yb}, std::pair{&pc, &yc}}) {
      std::vector<float> alone(y->size());
      cpu::panel_matmul(pool, *p, x.data(), T, alone.data());
      EXPECT_EQ(*y, alone) << "T=" << T << " rows=" << p->rows;
    }
    CpuBackend be(2);
    std::vector<float> ba(ya.size()), bb(yb.size()), bc(yc.size());
    const MatmulOut mouts[] = {{&a.view, ba.data()}, {&b.view, bb.data()}, {&c.view, bc.data()}};
    be.matmul_shared_input(x.data(), static_cast<int>(T), mouts);
    EXPECT_EQ(ba, ya);
    EXPECT_EQ(bb, yb);
    EXPECT_EQ(bc, yc);
  }
}

// Few tokens: the matrices' panels share one balanced region, in chunks that start inside one
// matrix and end inside the next (13, 5 and 9 panels, each padded to whole 4-panel tiles).
TEST(FloatPanels, FewTokenRegionAcrossMatricesGivesWhatEachGivesAlone) {
  SKIP_WITHOUT_PANELS();
  const int64_t K = 96;
  const Weights a(DType::F16, 200, K, 21), b(DType::F16, 72, K, 22), c(DType::BF16, 136, K, 23);
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    const cpu::FloatPanels pa = cpu::pack_panels(a.view, pool), pb = cpu::pack_panels(b.view, pool),
                           pc = cpu::pack_panels(c.view, pool);
    for (int64_t T = 1; T <= 11; ++T) {
      const std::vector<float> x = random_x(T * K, 7 + T);
      std::vector<float> ya(static_cast<size_t>(T * 200), -1.0f), yb(static_cast<size_t>(T * 72), -1.0f),
          yc(static_cast<size_t>(T * 136), -1.0f);
      const cpu::PanelOut outs[] = {{&pa, ya.data()}, {&pb, yb.data()}, {&pc, yc.data()}};
      cpu::panel_matmul_multi(pool, outs, x.data(), T);
      for (const auto& [p, y] : {std::pair{&pa, &ya}, std::pair{&pb, &yb}, std::pair{&pc, &yc}}) {
        std::vector<float> alone(y->size());
        cpu::panel_matmul(pool, *p, x.data(), T, alone.data());
        EXPECT_EQ(*y, alone) << "threads=" << threads << " T=" << T << " rows=" << p->rows;
      }
    }
  }
}

// More matrices than one parallel region takes (kMaxSharedInput = 4): the second region reuses
// the x the first one packed.
TEST(FloatPanels, FiveSharedInputMatricesGiveWhatEachGivesAlone) {
  SKIP_WITHOUT_PANELS();
  ThreadPool pool(2);
  const int64_t K = 70, T = 29;
  std::vector<Weights> ws;
  ws.reserve(5);
  std::vector<cpu::FloatPanels> ps;
  for (int i = 0; i < 5; ++i) ws.emplace_back(i % 2 ? DType::F16 : DType::F32, 16 * (i + 1) + i, K, 10 + i);
  for (const Weights& w : ws) ps.push_back(cpu::pack_panels(w.view, pool));
  const std::vector<float> x = random_x(T * K, 6);
  std::vector<std::vector<float>> ys;
  std::vector<cpu::PanelOut> outs;
  for (const cpu::FloatPanels& p : ps) ys.emplace_back(static_cast<size_t>(T * p.rows), -1.0f);
  for (size_t i = 0; i < ps.size(); ++i) outs.push_back({&ps[i], ys[i].data()});
  cpu::panel_matmul_multi(pool, outs, x.data(), T);
  for (size_t i = 0; i < ps.size(); ++i) {
    std::vector<float> alone(ys[i].size());
    cpu::panel_matmul(pool, ps[i], x.data(), T, alone.data());
    EXPECT_EQ(ys[i], alone) << "matrix " << i;
  }
}

}  // namespace
}  // namespace llmwb
