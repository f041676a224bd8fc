// test_qrepack.cpp — the row-interleaved copies of the 4-bit types (backend/cpu/qrepack.h):
// the round trip against unpack_block, the same bits at every SIMD level, the pages of a
// mapped file handed back (and never those of anonymous memory), and CpuBackend::matmul
// routing 4-bit weights through its cache. The products themselves are checked against
// dequantize-then-multiply with batch / thread invariance in test_qmatmul.cpp
// (QMatmulRepacked).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/qmatmul.h"
#include "backend/cpu/qrepack.h"
#include "llmwb/errors.h"
#include "memory/mapped_file.h"
#include "support/simd_levels.h"

namespace llmwb {
namespace {

using test::available_levels;
using test::SimdLevelGuard;

const std::vector<DType> kQ4Types = {DType::INT4_G32, DType::INT4_G128, DType::Q4_0, DType::Q4_1,
                                     DType::Q8_0,     DType::Q4_K,      DType::Q5_K, DType::Q6_K};

struct Weights {
  std::vector<uint8_t> storage;
  TensorView view;
  Weights(DType dt, int64_t rows, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const uint64_t rb = dtype_row_bytes(dt, cols);
    storage.resize(rb * rows);
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      for (float& v : row) v = nd(rng) + (r % 3 == 1 ? 1.5f : 0.0f);
      quantize_row(dt, row.data(), storage.data() + r * rb, cols);
    }
    view.name = "w";
    view.dtype = dt;
    view.shape = {rows, cols};
    view.data = storage.data();
    view.nbytes = storage.size();
  }
};

bool kquant(DType dt) { return dt == DType::Q4_K || dt == DType::Q5_K || dt == DType::Q6_K; }

// A row width of at least k that `dt` can hold (the k-quants need whole super-blocks of 256).
int64_t width_for(DType dt, int64_t k) { return kquant(dt) ? (k + 255) / 256 * 256 : k; }

std::vector<int64_t> ks_of(DType dt) {
  if (dt == DType::Q4_0 || dt == DType::Q4_1 || dt == DType::Q8_0) return {32, 96, 544};
  if (kquant(dt)) return {256, 512, 768};
  return {1, 5, 32, 33, 100, 128, 130, 300, 544};   // partial blocks and groups
}

std::vector<float> random_vector(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v) f = nd(rng);
  return v;
}

TEST(QRepack, EveryBlockReadsBackAsUnpackBlockGivesIt) {
  ThreadPool pool(2);
  for (DType dt : kQ4Types) {
    for (int64_t K : ks_of(dt)) {
      for (int64_t N : {1, 15, 16, 17, 40}) {
        Weights w(dt, N, K, static_cast<uint32_t>(N * 1000 + K));
        const auto p = cpu::repack_q4(w.view, pool);
        ASSERT_EQ(p->tiles, (N + 15) / 16);
        const int64_t nb = (K + 31) / 32;
        for (int64_t r = 0; r < p->tiles * 16; ++r) {
          for (int64_t b = 0; b < nb; ++b) {
            cpu::qkernels::QBlock got, want;
            cpu::packed_block(*p, r, b, &got);
            if (r < N) {
              cpu::qkernels::unpack_block(dt, w.view.row(r), K, b, &want);
            } else {
              std::memset(&want, 0, sizeof(want));   // padding rows are zero
            }
            const std::string where = std::string(dtype_name(dt)) + " N=" + std::to_string(N) +
                                      " K=" + std::to_string(K) + " row " + std::to_string(r) +
                                      " block " + std::to_string(b);
            // Zero bytes of the offset layouts (Q8_0's q + 128, Q6_K's q + 32) read back as
            // -128 / -32 with a zero scale: zero values all the same.
            if (r >= N && (dt == DType::Q8_0 || dt == DType::Q6_K)) std::memcpy(want.q, got.q, sizeof(got.q));
            ASSERT_EQ(std::memcmp(got.q, want.q, sizeof(got.q)), 0) << where;
            ASSERT_EQ(got.d_lo, want.d_lo) << where;
            ASSERT_EQ(got.d_hi, want.d_hi) << where;
            ASSERT_EQ(got.m, want.m) << where;
          }
        }
      }
    }
  }
}

TEST(QRepack, EverySimdLevelGivesTheSameBits) {
  ThreadPool pool(2);
  for (DType dt : kQ4Types) {
    for (int64_t K : ks_of(dt)) {
      Weights w(dt, 37, K, 9);
      const auto p = cpu::repack_q4(w.view, pool);
      for (int64_t T : {1, 2, 5}) {
        const std::vector<float> x = random_vector(static_cast<size_t>(T * K), 10);
        std::vector<float> ref;
        for (cpu::SimdLevel level : available_levels()) {
          SimdLevelGuard g(level);
          std::vector<float> y(static_cast<size_t>(T * 37), NAN);
          cpu::qmatmul_packed(pool, *p, x.data(), T, y.data());
          if (ref.empty()) {
            ref = y;
            continue;
          }
          EXPECT_EQ(std::memcmp(y.data(), ref.data(), sizeof(float) * y.size()), 0)
              << cpu::simd_level_name(level) << " " << dtype_name(dt) << " K=" << K << " T=" << T;
        }
      }
    }
  }
}

// The decode GEMV's software prefetch distance (TuningConfig::decode_prefetch) changes what is
// read ahead, never a bit of the result: none, the default, far past a tile's end.
TEST(QRepack, TheDecodePrefetchDistanceChangesNoBit) {
  ThreadPool pool(2);
  const cpu::DecodePrefetch before = cpu::decode_prefetch();
  for (DType dt : kQ4Types) {
    const int64_t K = width_for(dt, 1024);
    Weights w(dt, 300, K, 4);
    const auto p = cpu::repack_q4(w.view, pool);
    const std::vector<float> x = random_vector(static_cast<size_t>(K), 12);
    for (cpu::SimdLevel level : available_levels()) {
      SimdLevelGuard g(level);
      std::vector<float> ref;
      for (int64_t ahead : {int64_t{1024}, int64_t{0}, int64_t{64}, int64_t{16384}}) {
        cpu::set_decode_prefetch({ahead, ahead});
        std::vector<float> y(300, NAN);
        cpu::qmatmul_packed(pool, *p, x.data(), 1, y.data());
        if (ref.empty()) ref = y;
        EXPECT_EQ(std::memcmp(y.data(), ref.data(), sizeof(float) * y.size()), 0)
            << cpu::simd_level_name(level) << " " << dtype_name(dt) << " prefetch " << ahead;
      }
    }
  }
  cpu::set_decode_prefetch(before);
}

// The decode GEMV's tiles side by side (TuningConfig::decode_streams) change how the weights
// are read, never a bit of the result: 1, 2 and 4 streams at every level (AVX2 reads at most
// 2), row counts that leave 1-3 tiles at a thread's end and a partial last tile.
TEST(QRepack, TheDecodeStreamCountChangesNoBit) {
  ThreadPool pool(2);
  const int before = cpu::decode_streams();
  for (DType dt : kQ4Types) {
    const int64_t K = width_for(dt, 1024);
    for (int64_t rows : {int64_t{300}, int64_t{16 * 7}, int64_t{40}}) {
      Weights w(dt, rows, K, 5);
      const auto p = cpu::repack_q4(w.view, pool);
      const std::vector<float> x = random_vector(static_cast<size_t>(K), 13);
      for (cpu::SimdLevel level : available_levels()) {
        SimdLevelGuard g(level);
        std::vector<float> ref;
        for (int streams : {4, 1, 2}) {
          cpu::set_decode_streams(streams);
          EXPECT_EQ(cpu::decode_streams(), streams);
          std::vector<float> y(static_cast<size_t>(rows), NAN);
          cpu::qmatmul_packed(pool, *p, x.data(), 1, y.data());
          if (ref.empty()) ref = y;
          EXPECT_EQ(std::memcmp(y.data(), ref.data(), sizeof(float) * y.size()), 0)
              << cpu::simd_level_name(level) << " " << dtype_name(dt) << " rows " << rows << " streams " << streams;
        }
      }
    }
  }
  cpu::set_decode_streams(before);
}

// What the decode GEMV reports doing with the switches is what its kernel set does: the
// streams capped at the tiles it reads side by side (scalar 1, AVX2 2, AVX-512 VNNI 4), the
// prefetch distance only where its kernels prefetch (not the scalar ones).
TEST(QRepack, TheDecodeShapeIsWhatTheKernelSetReads) {
  const int streams_before = cpu::decode_streams();
  const cpu::DecodePrefetch prefetch_before = cpu::decode_prefetch();
  cpu::set_decode_streams(4);
  cpu::set_decode_prefetch({192, 0});
  for (cpu::SimdLevel level : available_levels()) {
    SimdLevelGuard g(level);
    const cpu::QuantizedDecodeShape s = cpu::qmatmul_decode_shape();
    const std::string set = cpu::qmatmul_kernel_name();
    const int cap = set == "avx512vnni" ? 4 : set == "avx2" ? 2 : 1;
    EXPECT_EQ(s.streams, cap) << set;
    EXPECT_EQ(s.prefetch_bytes, set == "scalar" ? 0 : 192) << set;
    cpu::set_decode_streams(1);
    EXPECT_EQ(cpu::qmatmul_decode_shape().streams, 1) << set;
    cpu::set_decode_streams(4);
  }
  cpu::set_decode_streams(streams_before);
  cpu::set_decode_prefetch(prefetch_before);
}

// qmatmul_packed_multi (one quantization of x, the rows of all matrices in one parallel pass)
// gives each output the bits of its own qmatmul_packed call, at every level, for any batch
// and thread count, with row counts that leave partial tiles between the matrices.
TEST(QRepack, SharedInputMatmulsGiveTheBitsOfSeparateCalls) {
  const int64_t rows[] = {37, 16, 50};
  for (DType dt : kQ4Types) {
    for (int64_t K : {width_for(dt, 32), width_for(dt, 544)}) {
      std::vector<std::unique_ptr<Weights>> w;
      std::vector<std::unique_ptr<cpu::PackedQ4>> p;
      ThreadPool pool1(1);
      for (int i = 0; i < 3; ++i) {
        w.push_back(std::make_unique<Weights>(dt, rows[i], K, static_cast<uint32_t>(20 + i)));
        p.push_back(cpu::repack_q4(w.back()->view, pool1));
      }
      for (int64_t T : {1, 3}) {
        const std::vector<float> x = random_vector(static_cast<size_t>(T * K), 11);
        for (cpu::SimdLevel level : available_levels()) {
          SimdLevelGuard g(level);
          std::vector<std::vector<float>> want(3);
          for (int i = 0; i < 3; ++i) {
            want[i].assign(static_cast<size_t>(T * rows[i]), NAN);
            cpu::qmatmul_packed(pool1, *p[i], x.data(), T, want[i].data());
          }
          for (int threads : {1, 2, 3}) {
            ThreadPool pool(threads);
            std::vector<std::vector<float>> y(3);
            cpu::PackedOut outs[3];
            for (int i = 0; i < 3; ++i) {
              y[i].assign(want[i].size(), NAN);
              outs[i] = {p[i].get(), y[i].data()};
            }
            cpu::qmatmul_packed_multi(pool, outs, x.data(), T);
            for (int i = 0; i < 3; ++i) {
              EXPECT_EQ(std::memcmp(y[i].data(), want[i].data(), sizeof(float) * y[i].size()), 0)
                  << cpu::simd_level_name(level) << " " << dtype_name(dt) << " K=" << K << " T=" << T
                  << " threads=" << threads << " matrix " << i;
            }
          }
        }
      }
    }
  }
}

// CpuBackend::matmul_shared_input fuses repacked weights of one width and falls back to
// separate calls otherwise (an INT8_ROW weight in the list); the bits are those of matmul
// either way.
TEST(QRepack, TheCpuBackendSharedInputMatmulEqualsSeparateMatmuls) {
  CpuBackend be(2);
  Weights a(DType::INT4_G32, 40, 96, 1), b(DType::INT4_G32, 24, 96, 2), c(DType::INT8_ROW, 8, 96, 3);
  const std::vector<float> x = random_vector(2 * 96, 4);
  for (bool with_q8 : {false, true}) {
    std::vector<float> ya(2 * 40, NAN), yb(2 * 24, NAN), yc(2 * 8, NAN);
    std::vector<MatmulOut> outs = {{&a.view, ya.data()}, {&b.view, yb.data()}};
    if (with_q8) outs.push_back({&c.view, yc.data()});
    be.matmul_shared_input(x.data(), 2, outs);
    std::vector<float> wa(ya.size()), wb(yb.size()), wc(yc.size());
    be.matmul(a.view, x.data(), 2, wa.data());
    be.matmul(b.view, x.data(), 2, wb.data());
    EXPECT_EQ(std::memcmp(ya.data(), wa.data(), sizeof(float) * ya.size()), 0) << "with_q8=" << with_q8;
    EXPECT_EQ(std::memcmp(yb.data(), wb.data(), sizeof(float) * yb.size()), 0) << "with_q8=" << with_q8;
    if (with_q8) {
      be.matmul(c.view, x.data(), 2, wc.data());
      EXPECT_EQ(std::memcmp(yc.data(), wc.data(), sizeof(float) * yc.size()), 0);
    }
  }
}

TEST(QRepack, AnonymousMemoryIsNeverHandedBack) {
  std::vector<uint8_t> v(1 << 20, 7);
  EXPECT_FALSE(release_mapped_pages(v.data(), v.size()));
  for (uint8_t b : v) ASSERT_EQ(b, 7);
}

TEST(QRepack, MappedFilePagesAreHandedBackAndRefault) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("llmwb_qrepack_" + std::to_string(::getpid()) + ".bin")).string();
  std::vector<uint8_t> bytes(3 << 16);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 131 + 7);
  {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  {
    MappedFile m(path);
    ASSERT_EQ(m.size(), bytes.size());
    EXPECT_EQ(std::memcmp(m.data(), bytes.data(), bytes.size()), 0);
    EXPECT_TRUE(release_mapped_pages(m.data() + 100, m.size() - 200));
    EXPECT_EQ(std::memcmp(m.data(), bytes.data(), bytes.size()), 0);   // refaulted from the file
    EXPECT_FALSE(release_mapped_pages(m.data() + 10, 20));           // no whole page inside
  }
  std::filesystem::remove(path);
}

TEST(QRepack, TheCpuBackendRunsRepackableWeightsOverItsCache) {
  CpuBackend be(2);
  std::vector<std::unique_ptr<Weights>> alive;   // the cache's contract: weights outlive it
  for (DType dt : kQ4Types) {
    const int64_t K = width_for(dt, 160);
    alive.push_back(std::make_unique<Weights>(dt, 50, K, 3));
    const Weights& w = *alive.back();
    const std::vector<float> x = random_vector(static_cast<size_t>(3 * K), 4);
    std::vector<float> y(3 * 50, NAN), want(y.size(), NAN);
    be.matmul(w.view, x.data(), 3, y.data());
    be.matmul(w.view, x.data(), 3, y.data());   // the second call reuses the copy
    cpu::qmatmul_packed(be.pool(), *cpu::repack_q4(w.view, be.pool()), x.data(), 3, want.data());
    EXPECT_EQ(std::memcmp(y.data(), want.data(), sizeof(float) * y.size()), 0) << dtype_name(dt);
  }
  EXPECT_EQ(be.repacked().size(), kQ4Types.size());
  EXPECT_GT(be.repacked().bytes(), 0u);

  // Other types keep the in-place kernels and are not copied.
  Weights q8(DType::INT8_ROW, 8, 64, 5);
  const std::vector<float> x = random_vector(64, 6);
  std::vector<float> y(8), want(8);
  be.matmul(q8.view, x.data(), 1, y.data());
  cpu::matmul(be.pool(), q8.view, x.data(), 1, want.data());
  EXPECT_EQ(std::memcmp(y.data(), want.data(), sizeof(float) * y.size()), 0);
  EXPECT_EQ(be.repacked().size(), kQ4Types.size());

  // A 4-bit view shorter than its shape is an error, not a read past its end.
  Weights shortw(DType::INT4_G32, 8, 64, 7);
  shortw.view.nbytes -= 1;
  EXPECT_THROW(be.matmul(shortw.view, x.data(), 1, y.data()), Error);
}

// The cache carves its copies out of shared huge-page chunks, one after another at 64-byte
// boundaries, and each is what repack_q4 builds on its own, byte for byte.
TEST(QRepack, TheCacheCarvesCopiesOutOfSharedChunks) {
  ThreadPool pool(2);
  cpu::RepackCache cache;
  std::vector<std::unique_ptr<Weights>> w;
  std::vector<const cpu::PackedQ4*> p;
  for (DType dt : kQ4Types) {
    w.push_back(std::make_unique<Weights>(dt, 37, width_for(dt, 96), 11));
    p.push_back(cache.get(w.back()->view, pool));
    ASSERT_NE(p.back(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p.back()->data()) % 64, 0u);
    const auto alone = cpu::repack_q4(w.back()->view, pool);
    ASSERT_EQ(alone->bytes(), p.back()->bytes());
    EXPECT_EQ(std::memcmp(alone->data(), p.back()->data(), alone->bytes()), 0) << dtype_name(dt);
  }
  for (size_t i = 1; i < p.size(); ++i)
    EXPECT_EQ(p[i]->data(), p[i - 1]->data() + (p[i - 1]->bytes() + 63) / 64 * 64) << i;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p[0]->data()) % (uintptr_t{2} << 20), 0u);   // a chunk's start
  EXPECT_EQ(cache.get(w[1]->view, pool), p[1]);   // found again, not rebuilt
  EXPECT_EQ(cache.size(), kQ4Types.size());
}

// A second view of the same bytes as another shape gets a copy of its own; the copy handed out
// for the first view stays valid and is found again (it used to be replaced, leaving the first
// pointer dangling).
TEST(QRepack, ViewsOfTheSameBytesWithOtherShapesGetCopiesOfTheirOwn) {
  ThreadPool pool(2);
  cpu::RepackCache cache;
  Weights w(DType::Q4_0, 32, 64, 5);
  TensorView wide = w.view;
  wide.shape = {16, 128};   // the same 32 x 64 Q4_0 bytes read as 16 rows of 128
  const cpu::PackedQ4* a = cache.get(w.view, pool);
  const std::vector<uint8_t> a_bytes(a->data(), a->data() + a->bytes());
  const cpu::PackedQ4* b = cache.get(wide, pool);
  ASSERT_NE(a, b);
  EXPECT_EQ(b->rows, 16);
  EXPECT_EQ(b->cols, 128);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.get(w.view, pool), a);
  EXPECT_EQ(a->rows, 32);
  EXPECT_EQ(a->cols, 64);
  EXPECT_EQ(std::memcmp(a->data(), a_bytes.data(), a_bytes.size()), 0);
  EXPECT_EQ(cache.get(wide, pool), b);
}

}  // namespace
}  // namespace llmwb
