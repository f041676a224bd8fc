// Every CUDA kernel against a CPU reference on fresh random inputs, outputs poisoned with NaN
// before each run: GEMV and the cuBLAS path for each weight format (against dequantize-then-
// multiply in double), the element-wise kernels, the K/V pool writes and copies, attention
// (tiled / split / naive, GQA, paged) against a float64 softmax, and argmax. The K/V pool is
// tested in each of its kinds (f32, f16, int8): the bytes equal the CPU KVCache's, and attention
// over each kind is checked against float64 attention of the values that pool holds.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <string>
#include <tuple>

#include "backend/backend.h"
#include "backend/cuda/cuda_matmul.h"
#include "runner/cuda/cuda_model.h"
#include "gpu_test.h"
#include "kv/kv_cache.h"
#include "llmwb_kernels.h"
#include "format/tensor.h"
#include "sample/rng.h"
#include "sample/sampler.h"

using namespace llmwb;
using namespace llmwb::test;
using cuda::DeviceBuffer;

namespace {

struct HostMatrix {
  DType dtype;
  int64_t rows, cols;
  std::vector<uint8_t> bytes;
  std::vector<double> deq;   // dequantized, row-major
};

HostMatrix random_matrix(DType t, int64_t rows, int64_t cols, std::mt19937_64& rng) {
  HostMatrix m{t, rows, cols, {}, {}};
  const uint64_t rb = dtype_row_bytes(t, cols);
  m.bytes.resize(rb * uint64_t(rows));
  std::vector<float> row(size_t(cols), 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    row = random_floats(size_t(cols), rng, 0.5f);
    quantize_row(t, row.data(), m.bytes.data() + uint64_t(r) * rb, cols);
    dequantize_row(t, m.bytes.data() + uint64_t(r) * rb, row.data(), cols);
    m.deq.insert(m.deq.end(), row.begin(), row.end());
  }
  return m;
}

cuda::DeviceMatrix device_matrix(const HostMatrix& h, const DeviceBuffer& b) {
  cuda::DeviceMatrix d;
  EXPECT_TRUE(cuda::device_wtype(h.dtype, &d.type));
  d.data = b.as();
  d.rows = h.rows;
  d.cols = h.cols;
  d.row_bytes = static_cast<int64_t>(dtype_row_bytes(h.dtype, h.cols));
  return d;
}

std::vector<double> reference_matmul(const HostMatrix& W, const std::vector<float>& x, int n) {
  std::vector<double> y(size_t(n) * size_t(W.rows));
  for (int r = 0; r < n; ++r)
    for (int64_t o = 0; o < W.rows; ++o) {
      double s = 0;
      for (int64_t c = 0; c < W.cols; ++c) s += W.deq[size_t(o * W.cols + c)] * x[size_t(r * W.cols + c)];
      y[size_t(r) * size_t(W.rows) + size_t(o)] = s;
    }
  return y;
}

const std::vector<DType>& gpu_types() {
  static const std::vector<DType> t{DType::F32,      DType::F16,      DType::BF16,     DType::Q8_0,     DType::Q4_0,
                                    DType::Q4_1,     DType::INT8_ROW, DType::INT4_G32, DType::INT4_G128};
  return t;
}

TEST(CudaGemv, EveryWeightFormatMatchesDequantizeThenMultiply) {
  LLMWB_REQUIRE_GPU();
  std::mt19937_64 rng(std::random_device{}());
  for (DType t : gpu_types()) {
    // 512: the vectorised path; 200 (and 100 for the float types): the element-wise path
    // (INT4 groups with a partial last group, rows not a multiple of 8 columns).
    for (int64_t cols : {int64_t(512), int64_t(200), int64_t(104)}) {
      if (!dtype_row_fits(t, cols)) continue;
      const HostMatrix W = random_matrix(t, 300, cols, rng);
      const DeviceBuffer dw = to_device(W.bytes);
      const cuda::DeviceMatrix dm = device_matrix(W, dw);
      for (int n : {1, 3, 8}) {
        const std::vector<float> x = random_floats(size_t(n * cols), rng);
        const DeviceBuffer dx = to_device(x);
        DeviceBuffer dy = poisoned(size_t(n) * 300);
        LLMWB_CUDA(cuda::gemv(dm, dx.as<float>(), n, dy.as<float>(), nullptr));
        const double err = rel_error(to_host<float>(dy, size_t(n) * 300), reference_matmul(W, x, n));
        EXPECT_LT(err, 1e-5) << dtype_name(t) << " cols " << cols << " rows " << n;
      }
    }
  }
}

TEST(CudaGemv, AnOutputDoesNotDependOnTheNumberOfRowsInTheCall) {
  LLMWB_REQUIRE_GPU();
  std::mt19937_64 rng(std::random_device{}());
  for (DType t : {DType::F16, DType::Q8_0, DType::INT4_G128}) {
    const HostMatrix W = random_matrix(t, 257, 1024, rng);
    const DeviceBuffer dw = to_device(W.bytes);
    const cuda::DeviceMatrix dm = device_matrix(W, dw);
    const std::vector<float> x = random_floats(8 * 1024, rng);
    const DeviceBuffer dx = to_device(x);
    DeviceBuffer all = poisoned(8 * 257);
    LLMWB_CUDA(cuda::gemv(dm, dx.as<float>(), 8, all.as<float>(), nullptr));
    const std::vector<float> y8 = to_host<float>(all, 8 * 257);
    for (int r = 0; r < 8; ++r) {
      const std::vector<float> xr(x.begin() + r * 1024, x.begin() + (r + 1) * 1024);
      const DeviceBuffer dxr = to_device(xr);
      DeviceBuffer one = poisoned(257);
      LLMWB_CUDA(cuda::gemv(dm, dxr.as<float>(), 1, one.as<float>(), nullptr));
      const std::vector<float> y1 = to_host<float>(one, 257);
      EXPECT_EQ(0, std::memcmp(y1.data(), y8.data() + r * 257, 257 * sizeof(float))) << dtype_name(t) << " row " << r;
    }
  }
}

TEST(CudaGemm, CublasPathMatchesDequantizeThenMultiply) {
  LLMWB_REQUIRE_GPU();
  std::mt19937_64 rng(std::random_device{}());
  cuda::Stream stream;
  cuda::CudaMatmul mm(stream.get());
  for (DType t : gpu_types()) {
    const HostMatrix W = random_matrix(t, 384, 256, rng);
    const DeviceBuffer dw = to_device(W.bytes);
    const cuda::DeviceMatrix dm = device_matrix(W, dw);
    const int n = 37;
    const std::vector<float> x = random_floats(size_t(n) * 256, rng);
    const DeviceBuffer dx = to_device(x);
    DeviceBuffer dy = poisoned(size_t(n) * 384);
    mm.run(dm, dx.as<float>(), n, dy.as<float>());
    stream.sync();
    const double err = rel_error(to_host<float>(dy, size_t(n) * 384), reference_matmul(W, x, n));
    // fp32 SGEMM; fp16 operands (F16 and the dequantized formats); bf16 operands.
    const double tol = t == DType::F32 ? 1e-5 : t == DType::BF16 ? 1e-2 : 3e-3;
    EXPECT_LT(err, tol) << dtype_name(t);
  }
}

TEST(CudaKernels, EmbeddingGatherDequantizesEveryFormat) {
  LLMWB_REQUIRE_GPU();
  std::mt19937_64 rng(std::random_device{}());
  for (DType t : gpu_types()) {
    const HostMatrix T = random_matrix(t, 100, 128, rng);
    const DeviceBuffer dt = to_device(T.bytes);
    const std::vector<int> tokens{5, 99, 0, 5, 42};
    const DeviceBuffer dtok = to_device(tokens);
    DeviceBuffer out = poisoned(tokens.size() * 128);
    LLMWB_CUDA(cuda::embed(device_matrix(T, dt), dtok.as<int>(), 5, out.as<float>(), nullptr));
    std::vector<double> ref;
    for (int tok : tokens) ref.insert(ref.end(), T.deq.begin() + tok * 128, T.deq.begin() + (tok + 1) * 128);
    EXPECT_EQ(rel_error(to_host<float>(out, tokens.size() * 128), ref), 0.0) << dtype_name(t);
  }
}

TEST(CudaKernels, RmsNormAloneAndFusedWithTheResidualAdd) {
  LLMWB_REQUIRE_GPU();
  std::mt19937_64 rng(std::random_device{}());
  const int n = 7, dim = 1000;
  const std::vector<float> x = random_floats(n * dim, rng), d = random_floats(n * dim, rng), w = random_floats(dim, rng);
  std::vector<double> sum(n * dim), ref(n * dim), ref_fused(n * dim);
  for (int r = 0; r < n; ++r) {
    double ss = 0, ss2 = 0;
    for (int i = 0; i < dim; ++i) {
      ss += double(x[r * dim + i]) * x[r * dim + i];
      sum[r * dim + i] = double(x[r * dim + i]) + d[r * dim + i];
      ss2 += sum[r * dim + i] * sum[r * dim + i];
    }
    for (int i = 0; i < dim; ++i) {
      ref[r * dim + i] = x[r * dim + i] / std::sqrt(ss / dim + 1e-5) * w[i];
      ref_fused[r * dim + i] = sum[r * dim + i] / std::sqrt(ss2 / dim + 1e-5) * w[i];
    }
  }
  DeviceBuffer dx = to_device(x);
  const DeviceBuffer dd = to_device(d), dw = to_device(w);
  DeviceBuffer out = poisoned(n * dim);
  LLMWB_CUDA(cuda::rmsnorm(dx.as<float>(), dw.as<float>(), n, dim, 1e-5f, out.as<float>(), nullptr));
  EXPECT_LT(rel_error(to_host<float>(out, n * dim), ref), 1e-6);
  out = poisoned(n * dim);
  LLMWB_CUDA(cuda::add_rmsnorm(dx.as<float>(), dd.as<float>(), dw.as<float>(), n, dim, 1e-5f, out.as<float>(), nullptr));
  EXPECT_LT(rel_error(to_host<float>(out, n * dim), ref_fused), 1e-6);
  EXPECT_LT(rel_error(to_host<float>(dx, n * dim), sum), 1e-7);   // x += delta written back
}

// The Q/K/V bias and Qwen3's per-head Q/K norm: add_bias over rows, rmsnorm in place over
// n_tokens * heads rows of head_dim (one gain vector for every head).
TEST(CudaKernels, AddBiasAndPerHeadRmsNormInPlace) {
  LLMWB_REQUIRE_GPU();
  std::mt19937_64 rng(std::random_device{}());
  const int n = 5, heads = 6, hd = 128, width = heads * hd;
  const std::vector<float> x = random_floats(n * width, rng), b = random_floats(width, rng), g = random_floats(hd, rng);
  std::vector<double> biased(n * width), ref(n * width);
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < width; ++i) biased[r * width + i] = double(x[r * width + i]) + b[i];
  for (int h = 0; h < n * heads; ++h) {
    double ss = 0;
    for (int i = 0; i < hd; ++i) ss += biased[h * hd + i] * biased[h * hd + i];
    for (int i = 0; i < hd; ++i) ref[h * hd + i] = biased[h * hd + i] / std::sqrt(ss / hd + 1e-6) * g[i];
  }
  DeviceBuffer dx = to_device(x);
  const DeviceBuffer db = to_device(b), dg = to_device(g);
  LLMWB_CUDA(cuda::add_bias(dx.as<float>(), db.as<float>(), n, width, nullptr));
  EXPECT_LT(rel_error(to_host<float>(dx, n * width), biased), 1e-7);
  LLMWB_CUDA(cuda::rmsnorm(dx.as<float>(), dg.as<float>(), n * heads, hd, 1e-6f, dx.as<float>(), nullptr));
  EXPECT_LT(rel_error(to_host<float>(dx, n * width), ref), 1e-6);
}

TEST(CudaKernels, RopeMatchesTheCpuBackendInBothLayouts) {
  LLMWB_REQUIRE_GPU();
  std::mt19937_64 rng(std::random_device{}());
  for (RopeLayout layout : {RopeLayout::Interleaved, RopeLayout::RotateHalf}) {
    ModelConfig c;
    c.head_dim = 128;
    c.rope_theta = 500000.0f;
    c.rope_layout = layout;
    c.rope_scaling.type = "llama3";
    c.rope_scaling.factor = 8.0f;
    const RopeParams rp = RopeParams::from(c);
    const int n = 5, nh = 4, nkv = 2, hd = 128;
    const std::vector<int> pos{0, 1, 77, 4095, 131071};
    const std::vector<float> q = random_floats(n * nh * hd, rng), k = random_floats(n * nkv * hd, rng);
    // Reference: the same formula in double.
    auto rotate = [&](std::vector<float> v, int heads) {
      std::vector<double> out(v.begin(), v.end());
      for (int r = 0; r < n; ++r)
        for (int h = 0; h < heads; ++h)
          for (int i = 0; i < hd / 2; ++i) {
            const double a = pos[r] * rp.inv_freq[i];
            const int ia = layout == RopeLayout::Interleaved ? 2 * i : i;
            const int ib = layout == RopeLayout::Interleaved ? 2 * i + 1 : i + hd / 2;
            const size_t base = (size_t(r) * heads + h) * hd;
            const double x0 = v[base + ia], x1 = v[base + ib];
            out[base + ia] = x0 * std::cos(a) - x1 * std::sin(a);
            out[base + ib] = x0 * std::sin(a) + x1 * std::cos(a);
          }
      return out;
    };
    DeviceBuffer dq = to_device(q), dk = to_device(k);
    const DeviceBuffer dpos = to_device(pos), dinv = to_device(rp.inv_freq);
    LLMWB_CUDA(cuda::rope(dq.as<float>(), dk.as<float>(), n, nh, nkv, hd, dpos.as<int>(), dinv.as<double>(),
                          layout == RopeLayout::Interleaved, nullptr));
    EXPECT_LT(rel_error(to_host<float>(dq, q.size()), rotate(q, nh)), 1e-6);
    EXPECT_LT(rel_error(to_host<float>(dk, k.size()), rotate(k, nkv)), 1e-6);
  }
}

TEST(CudaKernels, SiluMulAddAndGatherRows) {
  LLMWB_REQUIRE_GPU();
  std::mt19937_64 rng(std::random_device{}());
  const int64_t n = 100003;
  const std::vector<float> g = random_floats(size_t(n), rng, 3.0f), u = random_floats(size_t(n), rng);
  std::vector<double> ref(static_cast<size_t>(n)), sum(static_cast<size_t>(n));
  for (size_t i = 0; i < size_t(n); ++i) {
    ref[i] = g[i] / (1.0 + std::exp(-double(g[i]))) * u[i];
    sum[i] = double(g[i]) + u[i];
  }
  DeviceBuffer dg = to_device(g), da = to_device(g);
  const DeviceBuffer du = to_device(u);
  LLMWB_CUDA(cuda::silu_mul(dg.as<float>(), du.as<float>(), n, nullptr));
  EXPECT_LT(rel_error(to_host<float>(dg, size_t(n)), ref), 1e-6);
  LLMWB_CUDA(cuda::add(da.as<float>(), du.as<float>(), n, nullptr));
  EXPECT_LT(rel_error(to_host<float>(da, size_t(n)), sum), 1e-7);

  const int width = 300;
  const std::vector<float> src = random_floats(10 * width, rng);
  const std::vector<int> rows{9, 0, 4};
  const DeviceBuffer dsrc = to_device(src), drows = to_device(rows);
  DeviceBuffer out = poisoned(3 * width);
  LLMWB_CUDA(cuda::gather_rows(dsrc.as<float>(), drows.as<int>(), 3, width, out.as<float>(), nullptr));
  const std::vector<float> got = to_host<float>(out, 3 * width);
  for (int r = 0; r < 3; ++r)
    EXPECT_EQ(0, std::memcmp(got.data() + r * width, src.data() + rows[r] * width, width * sizeof(float)));
}

TEST(CudaKernels, StoreKvWritesSlotsAndCopyBlocksCopiesEveryLayer) {
  LLMWB_REQUIRE_GPU();
  std::mt19937_64 rng(std::random_device{}());
  const int n_layers = 3, num_blocks = 6, bs = 4, kv_dim = 40;
  const int64_t layer_stride = int64_t(num_blocks) * bs * kv_dim;
  const size_t pool_floats = size_t(layer_stride) * n_layers;
  std::vector<float> hk = random_floats(pool_floats, rng), hv = random_floats(pool_floats, rng);
  DeviceBuffer dk = to_device(hk), dv = to_device(hv);
  const int n = 4;
  const std::vector<float> k = random_floats(n * kv_dim, rng), v = random_floats(n * kv_dim, rng);
  const std::vector<int64_t> slots{3, 17, -1, 22};   // -1: skipped
  const DeviceBuffer dkn = to_device(k), dvn = to_device(v), ds = to_device(slots);
  const cuda::KVPool pool{dk.as(), dv.as(), nullptr, nullptr, KVDType::F32, int64_t(num_blocks) * bs, 5, kv_dim / 5};
  LLMWB_CUDA(cuda::store_kv(pool, 1, dkn.as<float>(), dvn.as<float>(), ds.as<int64_t>(), n, nullptr));
  for (int r = 0; r < n; ++r) {
    if (slots[r] < 0) continue;
    std::copy(k.begin() + r * kv_dim, k.begin() + (r + 1) * kv_dim, hk.begin() + layer_stride + slots[r] * kv_dim);
    std::copy(v.begin() + r * kv_dim, v.begin() + (r + 1) * kv_dim, hv.begin() + layer_stride + slots[r] * kv_dim);
  }
  EXPECT_EQ(to_host<float>(dk, pool_floats), hk);
  EXPECT_EQ(to_host<float>(dv, pool_floats), hv);
  const std::vector<int> pairs{1, 4, 5, 0};
  const DeviceBuffer dp = to_device(pairs);
  LLMWB_CUDA(cuda::copy_blocks(pool, n_layers, bs, dp.as<int>(), 2, nullptr));
  for (int l = 0; l < n_layers; ++l)
    for (int p = 0; p < 2; ++p) {
      const size_t src = size_t(l * layer_stride + pairs[2 * p] * bs * kv_dim);
      const size_t dst = size_t(l * layer_stride + pairs[2 * p + 1] * bs * kv_dim);
      std::copy(hk.begin() + src, hk.begin() + src + bs * kv_dim, hk.begin() + dst);
      std::copy(hv.begin() + src, hv.begin() + src + bs * kv_dim, hv.begin() + dst);
    }
  EXPECT_EQ(to_host<float>(dk, pool_floats), hk);
  EXPECT_EQ(to_host<float>(dv, pool_floats), hv);
}

// Writes every slot of every layer of `pool` (device, store_kv) and of `cpu` (KVCache::store)
// with the same rows: slots in a shuffled order, 7 rows per launch, the rows of each launch
// from rows(n, k, v) (n x kv_dim each). Returns the slot order (slot[0] got row 0 of the first
// launch).
template <class Rows>
std::vector<int64_t> store_every_slot(const cuda::KVPool& pool, KVCache& cpu, int n_layers, std::mt19937_64& rng, Rows rows) {
  const int64_t n_slots = pool.n_slots, kv_dim = pool.kv_dim();
  std::vector<int64_t> slots(static_cast<size_t>(n_slots));
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), rng);
  for (int l = 0; l < n_layers; ++l)
    for (int64_t r0 = 0; r0 < n_slots; r0 += 7) {
      const int n = int(std::min<int64_t>(7, n_slots - r0));
      std::vector<float> k, v;
      rows(n, k, v);
      const std::vector<int64_t> rs(slots.begin() + r0, slots.begin() + r0 + n);
      const DeviceBuffer dkn = to_device(k), dvn = to_device(v), drs = to_device(rs);
      LLMWB_CUDA(cuda::store_kv(pool, l, dkn.as<float>(), dvn.as<float>(), drs.as<int64_t>(), n, nullptr));
      for (int r = 0; r < n; ++r) cpu.store(l, rs[size_t(r)], k.data() + size_t(r) * kv_dim, v.data() + size_t(r) * kv_dim);
    }
  return slots;
}

// An int8 pool holds the bytes the CPU's KVCache writes for the same rows: the codes and the
// per-(slot, kv head) scales, equal bit for bit (so a sequence's K/V mean the same on both
// backends), including an all-zero head (scale 0, codes 0) and values on a rounding tie. Copies
// move codes and scales of every layer.
TEST(CudaKernels, Int8StoreKvWritesTheCpuCachesCodesAndScales) {
  LLMWB_REQUIRE_GPU();
  std::mt19937_64 rng(std::random_device{}());
  for (auto [n_kv_heads, head_dim] : {std::pair{4, 64}, std::pair{2, 8}, std::pair{3, 100}}) {
    const int n_layers = 3, num_blocks = 6, bs = 4, kv_dim = n_kv_heads * head_dim;
    const int64_t n_slots = int64_t(num_blocks) * bs;
    const size_t codes = size_t(n_slots) * kv_dim * n_layers, scales = size_t(n_slots) * n_kv_heads * n_layers;
    DeviceBuffer dk(codes), dv(codes), dks(sizeof(float) * scales), dvs(sizeof(float) * scales);
    LLMWB_CUDA(cudaMemset(dk.as(), 0x55, codes));
    LLMWB_CUDA(cudaMemset(dv.as(), 0x55, codes));
    LLMWB_CUDA(cudaMemset(dks.as(), 0xFF, dks.bytes()));   // NaN scales: an unwritten slot fails
    LLMWB_CUDA(cudaMemset(dvs.as(), 0xFF, dvs.bytes()));
    const cuda::KVPool pool{dk.as(), dv.as(), dks.as<float>(), dvs.as<float>(), KVDType::INT8, n_slots, n_kv_heads,
                            head_dim};
    KVCache cpu(n_layers, num_blocks, bs, n_kv_heads, head_dim, KVDType::INT8);
    // Every slot of every layer written, 7 rows per launch; row 0 of each launch has a zero head
    // and a value exactly half a step from two codes.
    store_every_slot(pool, cpu, n_layers, rng, [&](int n, std::vector<float>& k, std::vector<float>& v) {
      k = random_floats(size_t(n) * kv_dim, rng, 3.0f), v = random_floats(size_t(n) * kv_dim, rng);
      std::fill(k.begin(), k.begin() + head_dim, 0.0f);
      v[0] = 127.0f, v[1] = 2.5f;   // scale 1: 2.5 is a tie, to even (2)
      std::fill(v.begin() + 2, v.begin() + head_dim, 0.25f);
    });
    auto check = [&](const char* when) {
      const std::vector<int8_t> gk = to_host<int8_t>(dk, codes), gv = to_host<int8_t>(dv, codes);
      const std::vector<float> gks = to_host<float>(dks, scales), gvs = to_host<float>(dvs, scales);
      int bad = 0;
      for (int l = 0; l < n_layers; ++l)
        for (int64_t slot = 0; slot < n_slots; ++slot) {
          const size_t e = (size_t(l) * n_slots + size_t(slot)) * kv_dim, sc = (size_t(l) * n_slots + size_t(slot)) * n_kv_heads;
          bad += std::memcmp(gk.data() + e, cpu.k8(l, slot), size_t(kv_dim)) != 0;
          bad += std::memcmp(gv.data() + e, cpu.v8(l, slot), size_t(kv_dim)) != 0;
          for (int h = 0; h < n_kv_heads; ++h) {
            const float ck = cpu.k_scale(l, slot, h), cv = cpu.v_scale(l, slot, h);
            bad += std::memcmp(&gks[sc + size_t(h)], &ck, 4) != 0;
            bad += std::memcmp(&gvs[sc + size_t(h)], &cv, 4) != 0;
          }
        }
      EXPECT_EQ(bad, 0) << when << ": " << n_kv_heads << " kv heads x " << head_dim;
    };
    check("after store_kv");
    const std::vector<int> pairs{1, 4, 5, 0};
    const DeviceBuffer dp = to_device(pairs);
    LLMWB_CUDA(cuda::copy_blocks(pool, n_layers, bs, dp.as<int>(), 2, nullptr));
    cpu.copy_block(1, 4);
    cpu.copy_block(5, 0);
    check("after copy_blocks");
  }
}

float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// An f16 pool holds the half bits the CPU's KVCache writes (kv_half: saturate at +-65504, round
// to nearest even) for the same rows, bit for bit: random values over the whole range (exponents
// 2^-30 .. 2^17: float values that round to zero, half subnormals, normals, and beyond 65504),
// and in row 0 of each launch the edge cases: zeros of both signs, rounding ties (to even) among
// normals and subnormals, the largest half and the values around it that must saturate instead
// of becoming inf, infinities, NaNs (the CPU's NaN bits, not the hardware's canonical NaN) and a
// float subnormal. Copies move the halves of every layer.
TEST(CudaKernels, F16StoreKvWritesTheCpuCachesHalves) {
  LLMWB_REQUIRE_GPU();
  std::mt19937_64 rng(std::random_device{}());
  const std::vector<float> edge{0.0f, -0.0f,
                                1.0f + std::ldexp(1.0f, -11),       // tie: 1 (even)
                                1.0f + 3 * std::ldexp(1.0f, -11),   // tie: 1 + 2^-9 (even)
                                -2049.0f, 2051.0f,                  // ties: -2048, 2052
                                std::ldexp(1.0f, -24), -std::ldexp(1.0f, -24),   // smallest subnormal
                                std::ldexp(1.0f, -25),                       // tie: 0 (even)
                                std::ldexp(1.0f, -25) * 1.0000001f,          // above the tie: 2^-24
                                1.5f * std::ldexp(1.0f, -24),                // tie: 2 * 2^-24
                                2.5f * std::ldexp(1.0f, -24),                // tie: 2 * 2^-24
                                -3.0f * std::ldexp(1.0f, -26),               // 0.75 * 2^-24: -2^-24
                                std::ldexp(1.0f, -14) - std::ldexp(1.0f, -25),   // tie: 2^-14, the smallest normal
                                1023.0f * std::ldexp(1.0f, -24),             // the largest subnormal
                                65504.0f, -65504.0f, 65519.0f, 65520.0f, -65520.0f, 70000.0f, 1e30f, -3.4e38f,
                                INFINITY, -INFINITY, NAN, -NAN, bits_float(0x7FA12345u),   // a signalling NaN
                                1e-40f, -1e-40f};
  for (auto [n_kv_heads, head_dim] : {std::pair{3, 16}, std::pair{2, 64}}) {
    const int n_layers = 3, num_blocks = 6, bs = 4, kv_dim = n_kv_heads * head_dim;
    ASSERT_GE(kv_dim, int(edge.size()));
    const int64_t n_slots = int64_t(num_blocks) * bs;
    const size_t elems = size_t(n_slots) * kv_dim * n_layers;
    DeviceBuffer dk(2 * elems), dv(2 * elems);
    LLMWB_CUDA(cudaMemset(dk.as(), 0x55, dk.bytes()));
    LLMWB_CUDA(cudaMemset(dv.as(), 0x55, dv.bytes()));
    const cuda::KVPool pool{dk.as(), dv.as(), nullptr, nullptr, KVDType::F16, n_slots, n_kv_heads, head_dim};
    KVCache cpu(n_layers, num_blocks, bs, n_kv_heads, head_dim, KVDType::F16);
    auto random_value = [&] {
      const uint32_t sign = uint32_t(rng() & 1) << 31, mant = uint32_t(rng() & 0x7FFFFF);
      const uint32_t e = uint32_t(127 - 30 + int(rng() % 48));   // 2^-30 .. 2^17
      return bits_float(sign | (e << 23) | mant);
    };
    const std::vector<int64_t> slots = store_every_slot(pool, cpu, n_layers, rng, [&](int n, std::vector<float>& k,
                                                                                       std::vector<float>& v) {
      k.resize(size_t(n) * kv_dim), v.resize(k.size());
      for (float& x : k) x = random_value();
      for (float& x : v) x = random_value();
      std::copy(edge.begin(), edge.end(), k.begin());
      std::copy(edge.rbegin(), edge.rend(), v.begin());
    });
    auto check = [&](const char* when) {
      const std::vector<uint16_t> gk = to_host<uint16_t>(dk, elems), gv = to_host<uint16_t>(dv, elems);
      int bad = 0;
      for (int l = 0; l < n_layers; ++l)
        for (int64_t slot = 0; slot < n_slots; ++slot) {
          const size_t e = (size_t(l) * n_slots + size_t(slot)) * kv_dim;
          for (int i = 0; i < kv_dim; ++i) {
            const bool kb = gk[e + size_t(i)] != cpu.k16(l, slot)[i], vb = gv[e + size_t(i)] != cpu.v16(l, slot)[i];
            if ((kb || vb) && bad < 10)
              ADD_FAILURE() << when << ": layer " << l << " slot " << slot << " element " << i << ": K " << std::hex
                            << gk[e + size_t(i)] << " vs " << cpu.k16(l, slot)[i] << ", V " << gv[e + size_t(i)]
                            << " vs " << cpu.v16(l, slot)[i] << std::dec;
            bad += kb + vb;
          }
        }
      EXPECT_EQ(bad, 0) << when << ": " << n_kv_heads << " kv heads x " << head_dim;
    };
    check("after store_kv");
    // The edge cases mean what they should (the CPU's own bits, checked independently).
    const int64_t s0 = slots[0];
    const uint16_t* h = cpu.k16(0, s0);
    const std::vector<uint16_t> want{0x0000, 0x8000, 0x3C00, 0x3C02, 0xE800, 0x6802, 0x0001, 0x8001, 0x0000, 0x0001,
                                     0x0002, 0x0002, 0x8001, 0x0400, 0x03FF, 0x7BFF, 0xFBFF, 0x7BFF, 0x7BFF, 0xFBFF,
                                     0x7BFF, 0x7BFF, 0xFBFF, 0x7BFF, 0xFBFF};
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(h[i], want[i]) << "edge value " << i << " (" << edge[i] << ")";
    for (size_t i = want.size(); i < want.size() + 3; ++i) EXPECT_TRUE((h[i] & 0x7C00) == 0x7C00 && (h[i] & 0x3FF)) << "NaN " << i;
    EXPECT_EQ(h[want.size() + 3], 0x0000) << "a float subnormal rounds to +0";
    EXPECT_EQ(h[want.size() + 4], 0x8000) << "and to -0";
    const std::vector<int> pairs{1, 4, 5, 0};
    const DeviceBuffer dp = to_device(pairs);
    LLMWB_CUDA(cuda::copy_blocks(pool, n_layers, bs, dp.as<int>(), 2, nullptr));
    cpu.copy_block(1, 4);
    cpu.copy_block(5, 0);
    check("after copy_blocks");
  }
}

TEST(CudaKernels, ArgmaxTakesTheLowestIdOnTiesAndReportsItsSoftmaxProbability) {
  LLMWB_REQUIRE_GPU();
  std::mt19937_64 rng(std::random_device{}());
  const int rows = 5, vocab = 32003;
  std::vector<float> l = random_floats(size_t(rows) * vocab, rng);
  l[size_t(2) * vocab + 7] = 50.0f;   // a tie in row 2: 7 wins over 30000
  l[size_t(2) * vocab + 30000] = 50.0f;
  l[size_t(4) * vocab + vocab - 1] = 60.0f;   // the last id
  const DeviceBuffer dl = to_device(l);
  DeviceBuffer out(sizeof(int) * rows);
  LLMWB_CUDA(cudaMemset(out.as(), 0xFF, sizeof(int) * rows));
  LLMWB_CUDA(cuda::argmax_rows(dl.as<float>(), rows, vocab, out.as<int>(), nullptr, nullptr));
  const std::vector<int> got = to_host<int>(out, rows);
  for (int r = 0; r < rows; ++r)
    EXPECT_EQ(got[r], std::max_element(l.begin() + size_t(r) * vocab, l.begin() + size_t(r + 1) * vocab) -
                          (l.begin() + size_t(r) * vocab));
  // With the probability: the same ids, and 1 / sum e^(l - max) against float64.
  LLMWB_CUDA(cudaMemset(out.as(), 0xFF, sizeof(int) * rows));
  const DeviceBuffer prob = poisoned(rows);
  LLMWB_CUDA(cuda::argmax_rows(dl.as<float>(), rows, vocab, out.as<int>(), prob.as<float>(), nullptr));
  EXPECT_EQ(to_host<int>(out, rows), got);
  const std::vector<float> p = to_host<float>(prob, rows);
  for (int r = 0; r < rows; ++r) {
    const float* row = l.data() + size_t(r) * vocab;
    double sum = 0;
    for (int j = 0; j < vocab; ++j) sum += std::exp(double(row[j]) - double(row[got[size_t(r)]]));
    EXPECT_NEAR(p[size_t(r)], 1.0 / sum, 1e-5 / sum) << "row " << r;
  }
}

// ---- attention --------------------------------------------------------------------------------

struct AttnCase {
  int n_heads, n_kv_heads, head_dim;
};

struct SeqSpec {
  int start_pos, n_tokens;
};

struct AttnFixture {
  int bs = 16, num_blocks = 0;
  int n_rows = 0;
  std::vector<SeqSpec> seqs;
  std::vector<std::vector<int>> tables;
  std::vector<float> k, v, q;   // pool (one layer) and queries
  std::vector<int> row_pos, row_seq, seq_table, flat, tile_first, tile_rows;
  int max_ctx = 0;
};

// A prefill from 0, a decode at 50, a chunked-prefill continuation, a long decode (split over
// the context) and a long prefill chunk late in a context; or decodes only (the decode kernel
// for MHA and groups of 2), the last one long enough to be split.
const std::vector<SeqSpec> kMixedBatch{{0, 37}, {50, 1}, {20, 5}, {1500, 1}, {600, 70}};
const std::vector<SeqSpec> kDecodeBatch{{50, 1}, {0, 1}, {31, 1}, {700, 1}, {2999, 1}};

AttnFixture make_attention(const AttnCase& ac, const std::vector<SeqSpec>& seqs, std::mt19937_64& rng) {
  AttnFixture f;
  f.seqs = seqs;
  int blocks_needed = 0;
  for (auto& s : f.seqs) blocks_needed += (s.start_pos + s.n_tokens + f.bs - 1) / f.bs;
  f.num_blocks = blocks_needed + 7;
  std::vector<int> ids(size_t(f.num_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);   // the pages of a sequence are scattered
  size_t next = 0;
  const int group = ac.n_heads / ac.n_kv_heads;
  const int tile = cuda::attention_tile_rows(group);
  for (size_t s = 0; s < f.seqs.size(); ++s) {
    const SeqSpec& sp = f.seqs[s];
    const int ctx = sp.start_pos + sp.n_tokens;
    f.max_ctx = std::max(f.max_ctx, ctx);
    std::vector<int> t;
    for (int b = 0; b < (ctx + f.bs - 1) / f.bs; ++b) t.push_back(ids[next++]);
    f.seq_table.push_back(static_cast<int>(f.flat.size()));
    f.flat.insert(f.flat.end(), t.begin(), t.end());
    f.tables.push_back(t);
    for (int i = 0; i < sp.n_tokens; i += tile) {
      f.tile_first.push_back(f.n_rows + i);
      f.tile_rows.push_back(std::min(tile, sp.n_tokens - i));
    }
    for (int i = 0; i < sp.n_tokens; ++i) {
      f.row_pos.push_back(sp.start_pos + i);
      f.row_seq.push_back(static_cast<int>(s));
    }
    f.n_rows += sp.n_tokens;
  }
  const size_t kv_dim = size_t(ac.n_kv_heads) * ac.head_dim;
  f.k = random_floats(size_t(f.num_blocks) * f.bs * kv_dim, rng);
  f.v = random_floats(size_t(f.num_blocks) * f.bs * kv_dim, rng);
  f.q = random_floats(size_t(f.n_rows) * ac.n_heads * ac.head_dim, rng);
  return f;
}

// Float64 softmax attention; `weights` gets [row][head][0..pos] when given.
std::vector<double> reference_attention(const AttnCase& ac, const AttnFixture& f,
                                        std::vector<std::vector<double>>* weights = nullptr) {
  const int hd = ac.head_dim, group = ac.n_heads / ac.n_kv_heads;
  const size_t kv_dim = size_t(ac.n_kv_heads) * hd;
  const double scale = 1.0 / std::sqrt(double(hd));
  std::vector<double> out(size_t(f.n_rows) * ac.n_heads * hd);
  for (int r = 0; r < f.n_rows; ++r) {
    const std::vector<int>& table = f.tables[size_t(f.row_seq[size_t(r)])];
    const int ctx = f.row_pos[size_t(r)] + 1;
    for (int h = 0; h < ac.n_heads; ++h) {
      const int kvh = h / group;
      std::vector<double> s(static_cast<size_t>(ctx));
      double mx = -INFINITY;
      for (int j = 0; j < ctx; ++j) {
        const size_t slot = size_t(table[size_t(j / f.bs)]) * f.bs + j % f.bs;
        double d = 0;
        for (int e = 0; e < hd; ++e)
          d += double(f.q[(size_t(r) * ac.n_heads + h) * hd + e]) * f.k[slot * kv_dim + size_t(kvh) * hd + e];
        s[size_t(j)] = d * scale;
        mx = std::max(mx, s[size_t(j)]);
      }
      double sum = 0;
      for (double& x : s) sum += x = std::exp(x - mx);
      for (double& x : s) x /= sum;
      for (int j = 0; j < ctx; ++j) {
        const size_t slot = size_t(table[size_t(j / f.bs)]) * f.bs + j % f.bs;
        for (int e = 0; e < hd; ++e)
          out[(size_t(r) * ac.n_heads + h) * hd + e] += s[size_t(j)] * f.v[slot * kv_dim + size_t(kvh) * hd + e];
      }
      if (weights) weights->push_back(s);
    }
  }
  return out;
}

// An int8 pool of the fixture's K and V as the CPU's KVCache quantizes them (one layer: its
// slots are the pool's), and the fixture with K and V replaced by their dequantized values.
struct Int8Pool {
  std::vector<int8_t> k, v;
  std::vector<float> k_scale, v_scale;
  AttnFixture dequantized;
};
Int8Pool quantize_pool(const AttnCase& ac, const AttnFixture& f) {
  KVCache cache(1, f.num_blocks, f.bs, ac.n_kv_heads, ac.head_dim, KVDType::INT8);
  const size_t kv_dim = size_t(ac.n_kv_heads) * ac.head_dim, n_slots = size_t(f.num_blocks) * f.bs;
  Int8Pool p{{}, {}, {}, {}, f};
  for (size_t slot = 0; slot < n_slots; ++slot) {
    cache.store(0, int64_t(slot), f.k.data() + slot * kv_dim, f.v.data() + slot * kv_dim);
    cache.load(0, int64_t(slot), p.dequantized.k.data() + slot * kv_dim, p.dequantized.v.data() + slot * kv_dim);
    p.k.insert(p.k.end(), cache.k8(0, int64_t(slot)), cache.k8(0, int64_t(slot)) + kv_dim);
    p.v.insert(p.v.end(), cache.v8(0, int64_t(slot)), cache.v8(0, int64_t(slot)) + kv_dim);
    for (int h = 0; h < ac.n_kv_heads; ++h) {
      p.k_scale.push_back(cache.k_scale(0, int64_t(slot), h));
      p.v_scale.push_back(cache.v_scale(0, int64_t(slot), h));
    }
  }
  return p;
}

// An f16 pool of the fixture's K and V as the CPU's KVCache rounds them (kv_half), and the
// fixture with K and V replaced by the halves' values (KVCache::load).
struct HalfPool {
  std::vector<uint16_t> k, v;
  AttnFixture rounded;
};
HalfPool round_pool(const AttnCase& ac, const AttnFixture& f) {
  KVCache cache(1, f.num_blocks, f.bs, ac.n_kv_heads, ac.head_dim, KVDType::F16);
  const size_t kv_dim = size_t(ac.n_kv_heads) * ac.head_dim, n_slots = size_t(f.num_blocks) * f.bs;
  HalfPool p{{}, {}, f};
  for (size_t slot = 0; slot < n_slots; ++slot) {
    cache.store(0, int64_t(slot), f.k.data() + slot * kv_dim, f.v.data() + slot * kv_dim);
    cache.load(0, int64_t(slot), p.rounded.k.data() + slot * kv_dim, p.rounded.v.data() + slot * kv_dim);
    p.k.insert(p.k.end(), cache.k16(0, int64_t(slot)), cache.k16(0, int64_t(slot)) + kv_dim);
    p.v.insert(p.v.end(), cache.v16(0, int64_t(slot)), cache.v16(0, int64_t(slot)) + kv_dim);
  }
  return p;
}

// Every kernel (tiled, split, decode, naive with the heatmap's weights) over an f32, an f16 and
// an int8 pool, against float64 softmax attention of the values the pool holds (f16: the halves'
// values; int8: the dequantized codes; KVCache::load): the kernels add only float rounding, never
// the pool's. An f16 pool's outputs and weights are moreover the bits of the same kernels over an
// f32 pool holding the halves' values (the f16 paths convert and then do the f32 arithmetic).
TEST(CudaAttention, TiledSplitAndNaiveKernelsMatchFloat64Softmax) {
  LLMWB_REQUIRE_GPU();
  std::mt19937_64 rng(std::random_device{}());
  // MHA, GQA groups of 4, 8 and 16, head sizes 32..256, and head_dim 8 (stories260K: the naive
  // kernel).
  const std::vector<AttnCase> cases{{8, 8, 64},  {8, 2, 128}, {32, 4, 64}, {4, 1, 256},
                                    {16, 1, 32}, {8, 8, 8},   {16, 8, 128}, {4, 4, 256}};
  std::map<std::string, double> worst;         // kernels vs float64 of the pool's values, per pool kind
  std::map<std::string, double> pool_effect;   // float64 over the pool's values vs over the f32 K/V
  for (const AttnCase& ac : cases) {
    for (const auto* batch : {&kMixedBatch, &kDecodeBatch}) {
      const AttnFixture f = make_attention(ac, *batch, rng);
      const Int8Pool p8 = quantize_pool(ac, f);
      const HalfPool p16 = round_pool(ac, f);
      const DeviceBuffer dk16 = to_device(p16.k), dv16 = to_device(p16.v), dkr = to_device(p16.rounded.k),
                         dvr = to_device(p16.rounded.v);
      const DeviceBuffer dk = to_device(f.k), dv = to_device(f.v), dk8 = to_device(p8.k), dv8 = to_device(p8.v),
                         dks = to_device(p8.k_scale), dvs = to_device(p8.v_scale), dq = to_device(f.q),
                         dpos = to_device(f.row_pos), dseq = to_device(f.row_seq), dst = to_device(f.seq_table),
                         dflat = to_device(f.flat), dtf = to_device(f.tile_first), dtr = to_device(f.tile_rows);
      cuda::AttentionBatch b;
      b.n_rows = f.n_rows;
      b.row_pos = dpos.as<int>();
      b.row_seq = dseq.as<int>();
      b.seq_table = dst.as<int>();
      b.tables = dflat.as<int>();
      b.n_tiles = static_cast<int>(f.tile_first.size());
      b.tile_first = dtf.as<int>();
      b.tile_rows = dtr.as<int>();
      b.max_ctx = f.max_ctx;
      cuda::AttentionShape sh{ac.n_heads, ac.n_kv_heads, ac.head_dim, f.bs, 1.0f / std::sqrt(float(ac.head_dim))};
      const size_t n_out = size_t(f.n_rows) * ac.n_heads * ac.head_dim;
      const cuda::KVLayer f32 = cuda::kv_f32(dk.as<float>(), dv.as<float>());
      const cuda::KVLayer int8{dk8.as(), dv8.as(), dks.as<float>(), dvs.as<float>(), KVDType::INT8};
      const cuda::KVLayer f16{dk16.as(), dv16.as(), nullptr, nullptr, KVDType::F16};
      const cuda::KVLayer f32_rounded = cuda::kv_f32(dkr.as<float>(), dvr.as<float>());
      // The last sequence's rows have their weights recorded by the naive kernel.
      int first = 0;
      for (size_t s = 0; s < 4; ++s) first += f.seqs[s].n_tokens;
      const int nw = f.seqs[4].n_tokens, stride = f.seqs[4].start_pos + nw;
      const size_t n_weights = size_t(nw) * ac.n_heads * stride;
      // Every kernel's outputs over one pool: attention at each of `sms_list` (num_sms 1: one
      // split; 132, an H200, and 4096 split long contexts several ways), then the naive kernel's
      // output and weights.
      auto run_all = [&](const cuda::KVLayer& kv, std::initializer_list<int> sms_list) {
        std::vector<std::vector<float>> got;
        for (int sms : sms_list) {
          DeviceBuffer ws(sizeof(float) * size_t(std::max<int64_t>(1, cuda::attention_workspace_floats(b, sh, sms))));
          LLMWB_CUDA(cudaMemset(ws.as(), 0xFF, ws.bytes()));
          DeviceBuffer out = poisoned(n_out);
          LLMWB_CUDA(cuda::attention(dq.as<float>(), kv, b, sh, ws.as<float>(), sms, out.as<float>(), nullptr));
          got.push_back(to_host<float>(out, n_out));
        }
        DeviceBuffer weights = poisoned(n_weights);
        DeviceBuffer out = poisoned(n_out);
        LLMWB_CUDA(cuda::attention_naive(dq.as<float>(), kv, b, sh, out.as<float>(), weights.as<float>(), first, nw, stride,
                                         nullptr));
        got.push_back(to_host<float>(out, n_out));
        got.push_back(to_host<float>(weights, n_weights));
        return got;
      };
      for (const auto& [kv, fix, tag] : {std::tuple{f32, &f, "f32"}, std::tuple{f16, &p16.rounded, "f16"},
                                         std::tuple{int8, &p8.dequantized, "int8"}}) {
        const std::string where = std::to_string(ac.n_heads) + "/" + std::to_string(ac.n_kv_heads) + " heads, head_dim " +
                                  std::to_string(ac.head_dim) + ", " + tag + " K/V, " +
                                  (batch == &kDecodeBatch ? "decode batch" : "mixed batch");
        std::vector<std::vector<double>> wref;
        const std::vector<double> ref = reference_attention(ac, *fix, &wref);
        const std::vector<std::vector<float>> got = run_all(kv, {1, 132, 4096});
        const int sms[] = {1, 132, 4096};
        double& w_err = worst[tag];
        for (int i = 0; i < 3; ++i) {
          const double e = rel_error(got[size_t(i)], ref);
          w_err = std::max(w_err, e);
          EXPECT_LT(e, 1e-5) << where << ", sms " << sms[i];
        }
        w_err = std::max(w_err, rel_error(got[3], ref));
        EXPECT_LT(rel_error(got[3], ref), 1e-5) << "naive, " << where;
        const std::vector<float>& w = got[4];
        for (int i = 0; i < nw; ++i)
          for (int h = 0; h < ac.n_heads; ++h) {
            const std::vector<double>& rw = wref[size_t(first + i) * ac.n_heads + h];
            const std::vector<float> gw(w.begin() + (size_t(i) * ac.n_heads + h) * stride,
                                        w.begin() + (size_t(i) * ac.n_heads + h) * stride + rw.size());
            ASSERT_LT(rel_error(gw, rw), 1e-5) << "weights row " << i << " head " << h << ", " << where;
          }
        if (kv.kind == KVDType::F16) {   // at 132 SMs (tiled or decode kernel, split) and naive
          const std::vector<std::vector<float>> as_f32 = run_all(f32_rounded, {132});
          const std::vector<float>* mine[] = {&got[1], &got[3], &got[4]};
          for (size_t i = 0; i < 3; ++i)
            EXPECT_EQ(0, std::memcmp(mine[i]->data(), as_f32[i].data(), sizeof(float) * as_f32[i].size()))
                << "f16 pool vs f32 pool of the same values, " << (i == 0 ? "attention" : i == 1 ? "naive" : "weights")
                << ", " << where;
        }
      }
      // The quantization itself is visible: int8 K/V move the output away from the f32 answer.
      const std::vector<double> exact = reference_attention(ac, f), quant = reference_attention(ac, p8.dequantized);
      std::vector<float> qf(quant.begin(), quant.end());
      EXPECT_GT(rel_error(qf, exact), 1e-5);
      EXPECT_LT(rel_error(qf, exact), 2e-2);
      pool_effect["int8"] = std::max(pool_effect["int8"], rel_error(qf, exact));
      // So is f16's rounding, about 2^-12 of each element, a sixteenth of int8's at these sizes.
      const std::vector<double> half = reference_attention(ac, p16.rounded);
      const std::vector<float> hf(half.begin(), half.end());
      EXPECT_GT(rel_error(hf, exact), 1e-5);
      EXPECT_LT(rel_error(hf, exact), 2e-3);
      pool_effect["f16"] = std::max(pool_effect["f16"], rel_error(hf, exact));
    }
  }
  for (const auto& [tag, e] : worst)
    std::printf("%s pool: kernels vs float64 attention of its values, worst relative error %.3g\n", tag.c_str(), e);
  for (const auto& [tag, e] : pool_effect)
    std::printf("%s pool: its rounding moves float64 attention by at most %.3g (relative)\n", tag.c_str(), e);
}

}  // namespace

namespace {

// The fused decode launches give the separate launches' bits: Q, K and V stacked in one GEMV,
// and the FFN's gate and up with SwiGLU applied in the same pass.
TEST(CudaGemv, StackedAndSwigluLaunchesEqualSeparateOnes) {
  LLMWB_REQUIRE_GPU();
  std::mt19937_64 rng(std::random_device{}());
  for (DType t : {DType::F16, DType::Q8_0, DType::Q4_0, DType::INT8_ROW}) {
    const HostMatrix A = random_matrix(t, 256, 512, rng), B = random_matrix(t, 64, 512, rng),
                     C = random_matrix(t, 64, 512, rng), D = random_matrix(t, 256, 512, rng);
    const DeviceBuffer da = to_device(A.bytes), db = to_device(B.bytes), dc = to_device(C.bytes), dd = to_device(D.bytes);
    const cuda::DeviceMatrix ma = device_matrix(A, da), mb = device_matrix(B, db), mc = device_matrix(C, dc),
                             md = device_matrix(D, dd);
    for (int n : {1, 5}) {
      const std::vector<float> x = random_floats(size_t(n) * 512, rng, 2.0f);
      const DeviceBuffer dx = to_device(x);
      DeviceBuffer ya = poisoned(size_t(n) * 256), yb = poisoned(size_t(n) * 64), yc = poisoned(size_t(n) * 64);
      const cuda::DeviceMatrix* w[3] = {&ma, &mb, &mc};
      ASSERT_TRUE(cuda::gemv_can_stack(w, 3, dx.as<float>()));
      float* ys[3] = {ya.as<float>(), yb.as<float>(), yc.as<float>()};
      LLMWB_CUDA(cuda::gemv_stacked(w, ys, 3, dx.as<float>(), n, nullptr));
      for (auto [m, y, rows] : {std::tuple{&ma, &ya, 256}, std::tuple{&mb, &yb, 64}, std::tuple{&mc, &yc, 64}}) {
        DeviceBuffer one = poisoned(size_t(n) * rows);
        LLMWB_CUDA(cuda::gemv(*m, dx.as<float>(), n, one.as<float>(), nullptr));
        EXPECT_EQ(to_host<float>(*y, size_t(n) * rows), to_host<float>(one, size_t(n) * rows)) << dtype_name(t);
      }
      // SwiGLU: gate A, up D.
      DeviceBuffer fused = poisoned(size_t(n) * 256), g = poisoned(size_t(n) * 256), u = poisoned(size_t(n) * 256);
      LLMWB_CUDA(cuda::gemv_swiglu(ma, md, dx.as<float>(), n, fused.as<float>(), nullptr));
      LLMWB_CUDA(cuda::gemv(ma, dx.as<float>(), n, g.as<float>(), nullptr));
      LLMWB_CUDA(cuda::gemv(md, dx.as<float>(), n, u.as<float>(), nullptr));
      LLMWB_CUDA(cuda::silu_mul(g.as<float>(), u.as<float>(), int64_t(n) * 256, nullptr));
      const std::vector<float> fh = to_host<float>(fused, size_t(n) * 256);
      EXPECT_EQ(fh, to_host<float>(g, size_t(n) * 256)) << dtype_name(t);
      for (float v : fh) ASSERT_TRUE(std::isfinite(v));
    }
  }
}

}  // namespace

namespace {

// Every row sampled on the device equals the CPU sampler's draw (engine/sample/sampler.cpp) with
// the same parameters and the same uniform: the RNG is copied, the copy's first uniform goes to
// the device, the original to Sampler::sample. Logits with ties and a flat stretch, so the
// candidate order's tie rule (lower id first) and the cuts' boundaries are exercised.
TEST(CudaSampling, DeviceSamplingDrawsTheCpuSamplersToken) {
  LLMWB_REQUIRE_GPU();
  std::mt19937_64 rng(std::random_device{}());
  const int rows = 120, vocab = 3001;
  std::vector<float> logits = random_floats(size_t(rows) * vocab, rng, 2.0f);
  for (int r = 0; r < rows; r += 3)   // repeated values: ties in probability
    for (int j = 0; j < vocab; j += 7) logits[size_t(r) * vocab + size_t(j)] = logits[size_t(r) * vocab + size_t(j % 5)];
  const int top_ks[] = {0, 1, 5, 40, vocab};
  const float top_ps[] = {1.0f, 0.9f, 0.5f, 0.05f};
  const float min_ps[] = {0.0f, 0.0f, 0.05f};
  std::vector<RowSampling> params(rows);
  std::vector<SamplingParams> host(rows);
  std::vector<Rng> rngs;
  for (int r = 0; r < rows; ++r) {
    SamplingParams& h = host[size_t(r)];
    h.temperature = r % 16 == 0 ? 0.0f : 0.3f + 1.5f * std::uniform_real_distribution<float>(0, 1)(rng);
    h.top_k = top_ks[r % 5];
    h.top_p = top_ps[(r / 5) % 4];
    h.min_p = min_ps[(r / 20) % 3];
    rngs.emplace_back(rng());
    Rng copy = rngs.back();
    RowSampling& d = params[size_t(r)];
    d.temperature = h.temperature;
    d.top_k = h.top_k;
    d.top_p = h.top_p;
    d.min_p = h.min_p;
    d.u = h.temperature > 0 ? copy.uniform() : 0.0;
  }
  const DeviceBuffer dl = to_device(logits), dp = to_device(params);
  DeviceBuffer tok(sizeof(int) * rows);
  LLMWB_CUDA(cudaMemset(tok.as(), 0xFF, sizeof(int) * rows));
  DeviceBuffer prob = poisoned(rows);
  LLMWB_CUDA(cuda::sample_rows(dl.as<float>(), rows, vocab, dp.as<RowSampling>(), tok.as<int>(),
                               prob.as<float>(), nullptr));
  const std::vector<int> got = to_host<int>(tok, rows);
  const std::vector<float> gp = to_host<float>(prob, rows);
  Sampler sampler;
  for (int r = 0; r < rows; ++r) {
    std::vector<float> row(logits.begin() + size_t(r) * vocab, logits.begin() + size_t(r + 1) * vocab);
    const SampleResult ref = sampler.sample(row.data(), vocab, host[size_t(r)], rngs[size_t(r)], {});
    const SamplingParams& h = host[size_t(r)];
    EXPECT_EQ(got[size_t(r)], ref.token) << "row " << r << " T " << h.temperature << " k " << h.top_k << " p "
                                         << h.top_p << " min_p " << h.min_p;
    EXPECT_NEAR(gp[size_t(r)], ref.prob, 1e-6 * std::max(1.0f, ref.prob)) << "row " << r;
  }
}

}  // namespace
