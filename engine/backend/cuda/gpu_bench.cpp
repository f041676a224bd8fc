#include "backend/cuda/gpu_bench.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>

#include "backend/cuda/cuda_device.h"
#include "backend/cuda/cuda_matmul.h"
#include "backend/cuda/cuda_resources.h"
#include "format/tensor.h"
#include "llmwb_kernels.h"

namespace llmwb::cuda {
namespace {

// Median milliseconds of `reps` runs of `fn` on `s`, after 3 warm-up runs.
double time_ms(cudaStream_t s, int reps, const std::function<void()>& fn) {
  for (int i = 0; i < 3; ++i) fn();
  LLMWB_CUDA(cudaStreamSynchronize(s));
  std::vector<double> t;
  Event a, b;
  for (int i = 0; i < reps; ++i) {
    a.record(s);
    fn();
    b.record(s);
    t.push_back(b.ms_since(a));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// n random floats (uniform in [-1, 1)) into device memory, generated in host chunks.
void fill_random(float* d, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> chunk(std::min<size_t>(n, size_t(1) << 24));
  for (size_t off = 0; off < n; off += chunk.size()) {
    const size_t m = std::min(chunk.size(), n - off);
    for (size_t i = 0; i < m; ++i) chunk[i] = u(rng);
    LLMWB_CUDA(cudaMemcpy(d + off, chunk.data(), sizeof(float) * m, cudaMemcpyHostToDevice));
  }
}

std::string shape(const char* fmt, double a, double b = 0, double c = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, fmt, a, b, c);
  return buf;
}

}  // namespace

std::string device_summary() {
  const std::string why = unavailable_reason();
  if (!why.empty()) return "no usable GPU: " + why;
  cudaDeviceProp p{};
  LLMWB_CUDA(cudaGetDeviceProperties(&p, 0));
  int drv = 0, rt = 0;
  LLMWB_CUDA(cudaDriverGetVersion(&drv));
  LLMWB_CUDA(cudaRuntimeGetVersion(&rt));
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s, cc %d.%d, %d SMs, %.1f GiB, L2 %.0f MiB, driver %d, runtime %d", p.name, p.major,
                p.minor, p.multiProcessorCount, double(p.totalGlobalMem) / (1u << 30), double(p.l2CacheSize) / (1 << 20),
                drv, rt);
  return buf;
}

std::vector<BenchFigure> run_gpu_bench(bool quick) {
  std::vector<BenchFigure> out;
  Stream stream;
  const cudaStream_t s = stream.get();
  cudaDeviceProp prop{};
  LLMWB_CUDA(cudaGetDeviceProperties(&prop, 0));
  const int reps = quick ? 3 : 10;

  {  // Copy bandwidth: bytes read + bytes written, as METHOD.md counts it.
    const size_t bytes = quick ? (size_t(64) << 20) : (size_t(2) << 30);
    DeviceBuffer a(bytes), b(bytes);
    fill_random(a.as<float>(), bytes / 4, 1);
    const double ms = time_ms(s, reps, [&] { LLMWB_CUDA(cudaMemcpyAsync(b.as(), a.as(), bytes, cudaMemcpyDeviceToDevice, s)); });
    out.push_back({"copy_bandwidth", 2.0 * double(bytes) / (ms * 1e-3) / 1e9, "GB/s", ms,
                   shape("device-to-device copy of %.0f MiB, read + write counted", double(bytes) / (1 << 20))});
  }
  {  // bf16 GEMM, fp32 accumulation, random operands.
    const int n = quick ? 1024 : 8192;
    DeviceBuffer af(sizeof(float) * size_t(n) * n), a(2 * size_t(n) * n), b(2 * size_t(n) * n), c(4 * size_t(n) * n);
    fill_random(af.as<float>(), size_t(n) * n, 2);
    LLMWB_CUDA(f32_to_half(af.as<float>(), a.as(), int64_t(n) * n, true, s));
    fill_random(af.as<float>(), size_t(n) * n, 3);
    LLMWB_CUDA(f32_to_half(af.as<float>(), b.as(), int64_t(n) * n, true, s));
    CublasHandle h;
    LLMWB_CUDA(cublas().set_stream(h.get(), s));
    const float alpha = 1, beta = 0;
    const double ms = time_ms(s, reps, [&] {
      LLMWB_CUDA(cublas().gemm_ex(h.get(), CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &alpha, a.as(), CUDA_R_16BF, n, b.as(),
                              CUDA_R_16BF, n, &beta, c.as(), CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    });
    out.push_back({"gemm_bf16", 2.0 * double(n) * n * n / (ms * 1e-3) / 1e12, "TFLOP/s", ms,
                   shape("cublasGemmEx %.0f^3, bf16 in, fp32 out and accumulation", n)});
  }
  {  // GEMV per weight format: one decode token through an 8192 x 8192 matrix (batch 1 and 8).
    const int64_t rows = quick ? 1024 : 8192, cols = quick ? 1024 : 8192;
    std::mt19937_64 rng(4);
    std::normal_distribution<float> nd(0.0f, 0.02f);
    std::vector<float> row(size_t(cols), 0.0f);
    DeviceBuffer x(sizeof(float) * 8 * size_t(cols)), y(sizeof(float) * 8 * size_t(rows));
    fill_random(x.as<float>(), 8 * size_t(cols), 5);
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::INT8_ROW, DType::Q4_0, DType::INT4_G128}) {
      const uint64_t rb = dtype_row_bytes(t, cols);
      std::vector<uint8_t> host(rb * uint64_t(rows));
      for (int64_t r = 0; r < rows; ++r) {
        for (float& v : row) v = nd(rng);
        quantize_row(t, row.data(), host.data() + uint64_t(r) * rb, cols);
      }
      DeviceBuffer w(host.size());
      LLMWB_CUDA(cudaMemcpy(w.as(), host.data(), host.size(), cudaMemcpyHostToDevice));
      DeviceMatrix m;
      device_wtype(t, &m.type);
      m.data = w.as();
      m.rows = rows, m.cols = cols, m.row_bytes = int64_t(rb);
      for (int n : {1, 8}) {
        const double ms = time_ms(s, reps * 5, [&] { LLMWB_CUDA(gemv(m, x.as<float>(), n, y.as<float>(), s)); });
        std::string name = std::string("gemv_") + dtype_name(t) + "_n" + std::to_string(n);
        std::transform(name.begin(), name.end(), name.begin(), [](char ch) { return char(std::tolower(ch)); });
        out.push_back({name, double(host.size()) / (ms * 1e-3) / 1e9, "GB/s", ms,
                       shape("%.0f x %.0f weights, %.0f token(s); weight bytes per second", double(rows), double(cols), n)});
      }
    }
  }
  {  // Attention, Llama-2-7B shape (32 heads, head_dim 128, MHA), block size 16.
    const int heads = 32, hd = 128, bs = 16;
    struct Case {
      const char* name;
      int seqs, ctx, new_tokens;   // new_tokens per sequence (1: decode)
    };
    const std::vector<Case> cases = quick ? std::vector<Case>{{"decode_b4_ctx512", 4, 512, 1}, {"prefill_512", 1, 512, 512}}
                                          : std::vector<Case>{{"decode_b1_ctx8192", 1, 8192, 1},
                                                              {"decode_b64_ctx2048", 64, 2048, 1},
                                                              {"prefill_2048", 1, 2048, 2048}};
    for (const Case& c : cases) {
      const int blocks_per_seq = (c.ctx + bs - 1) / bs, num_blocks = c.seqs * blocks_per_seq;
      const int64_t kv_dim = int64_t(heads) * hd;
      DeviceBuffer k(sizeof(float) * size_t(num_blocks) * bs * size_t(kv_dim)), v(k.bytes());
      fill_random(k.as<float>(), k.bytes() / 4, 6);
      fill_random(v.as<float>(), v.bytes() / 4, 7);
      // Host metadata: sequence i owns blocks i, i + seqs, i + 2 seqs, ... (interleaved pages).
      std::vector<int> pos, rseq, stab, tables, tfirst, trows;
      const int tile = attention_tile_rows(1);
      for (int sidx = 0; sidx < c.seqs; ++sidx) {
        stab.push_back(int(tables.size()));
        for (int b = 0; b < blocks_per_seq; ++b) tables.push_back(sidx + b * c.seqs);
        const int first = int(pos.size());
        for (int i = 0; i < c.new_tokens; ++i) {
          pos.push_back(c.ctx - c.new_tokens + i);
          rseq.push_back(sidx);
        }
        for (int i = 0; i < c.new_tokens; i += tile) {
          tfirst.push_back(first + i);
          trows.push_back(std::min(tile, c.new_tokens - i));
        }
      }
      auto up = [&](const std::vector<int>& h) {
        DeviceBuffer d(sizeof(int) * std::max<size_t>(1, h.size()));
        LLMWB_CUDA(cudaMemcpy(d.as(), h.data(), sizeof(int) * h.size(), cudaMemcpyHostToDevice));
        return d;
      };
      DeviceBuffer dpos = up(pos), drs = up(rseq), dst = up(stab), dtb = up(tables), dtf = up(tfirst), dtr = up(trows);
      AttentionBatch b;
      b.n_rows = int(pos.size());
      b.row_pos = dpos.as<int>(), b.row_seq = drs.as<int>(), b.seq_table = dst.as<int>(), b.tables = dtb.as<int>();
      b.n_tiles = int(tfirst.size()), b.tile_first = dtf.as<int>(), b.tile_rows = dtr.as<int>();
      b.max_ctx = c.ctx;
      AttentionShape sh{heads, heads, hd, bs, 1.0f / std::sqrt(float(hd))};
      DeviceBuffer q(sizeof(float) * size_t(b.n_rows) * size_t(kv_dim)), o(q.bytes());
      fill_random(q.as<float>(), q.bytes() / 4, 8);
      DeviceBuffer ws(sizeof(float) * size_t(std::max<int64_t>(1, attention_workspace_floats(b, sh, prop.multiProcessorCount))));
      const double tiled = time_ms(s, reps, [&] {
        LLMWB_CUDA(attention(q.as<float>(), kv_f32(k.as<float>(), v.as<float>()), b, sh, ws.as<float>(),
                             prop.multiProcessorCount, o.as<float>(), s));
      });
      const double naive = time_ms(s, reps, [&] {
        LLMWB_CUDA(attention_naive(q.as<float>(), kv_f32(k.as<float>(), v.as<float>()), b, sh, o.as<float>(), nullptr, 0, 0,
                                   0, s));
      });
      if (c.new_tokens == 1) {
        const double bytes = 2.0 * c.seqs * double(c.ctx) * double(kv_dim) * 4;   // K and V read once
        for (auto [tag, ms] : {std::pair<const char*, double>{"tiled", tiled}, {"naive", naive}})
          out.push_back({std::string("attention_") + c.name + "_" + tag, bytes / (ms * 1e-3) / 1e9, "GB/s", ms,
                         shape("%.0f sequences x %.0f context, 32 heads x 128, f32 K/V bytes read per second", c.seqs, c.ctx)});
        // The same decode over an f16 and an int8 pool (--kv-dtype f16 / int8): the same K/V
        // rounded or quantized by store_kv.
        const int64_t n_slots = int64_t(num_blocks) * bs;
        std::vector<int64_t> all(static_cast<size_t>(n_slots));
        for (int64_t i = 0; i < n_slots; ++i) all[size_t(i)] = i;
        DeviceBuffer dall(sizeof(int64_t) * all.size());
        LLMWB_CUDA(cudaMemcpy(dall.as(), all.data(), dall.bytes(), cudaMemcpyHostToDevice));
        {
          DeviceBuffer k16(2 * size_t(n_slots * kv_dim)), v16(k16.bytes());
          const KVPool pool16{k16.as(), v16.as(), nullptr, nullptr, KVDType::F16, n_slots, heads, hd};
          LLMWB_CUDA(store_kv(pool16, 0, k.as<float>(), v.as<float>(), dall.as<int64_t>(), int(n_slots), s));
          const double f16 = time_ms(s, reps, [&] {
            LLMWB_CUDA(attention(q.as<float>(), kv_layer(pool16, 0), b, sh, ws.as<float>(), prop.multiProcessorCount,
                                 o.as<float>(), s));
          });
          const double bytes16 = bytes / 2;
          out.push_back({std::string("attention_") + c.name + "_tiled_f16kv", bytes16 / (f16 * 1e-3) / 1e9, "GB/s", f16,
                         shape("%.0f sequences x %.0f context, 32 heads x 128, f16 K/V bytes read per second", c.seqs,
                               c.ctx)});
        }
        DeviceBuffer k8(size_t(n_slots * kv_dim)), v8(k8.bytes()), ks(sizeof(float) * size_t(n_slots) * heads), vs(ks.bytes());
        const KVPool pool8{k8.as(), v8.as(), ks.as<float>(), vs.as<float>(), KVDType::INT8, n_slots, heads, hd};
        LLMWB_CUDA(store_kv(pool8, 0, k.as<float>(), v.as<float>(), dall.as<int64_t>(), int(n_slots), s));
        const double int8 = time_ms(s, reps, [&] {
          LLMWB_CUDA(attention(q.as<float>(), kv_layer(pool8, 0), b, sh, ws.as<float>(), prop.multiProcessorCount,
                               o.as<float>(), s));
        });
        const double bytes8 = 2.0 * c.seqs * double(c.ctx) * (double(kv_dim) + 4.0 * heads);   // codes and scales
        out.push_back({std::string("attention_") + c.name + "_tiled_int8kv", bytes8 / (int8 * 1e-3) / 1e9, "GB/s", int8,
                       shape("%.0f sequences x %.0f context, 32 heads x 128, int8 K/V (codes + scales) bytes read per second",
                             c.seqs, c.ctx)});
      } else {
        // Causal: each query q attends to q + 1 keys; 4 flops per (query, key, dim) (QK^T and PV).
        const double n = c.new_tokens;
        const double flops = 4.0 * heads * hd * (n * (n + 1) / 2);
        for (auto [tag, ms] : {std::pair<const char*, double>{"tiled", tiled}, {"naive", naive}})
          out.push_back({std::string("attention_") + c.name + "_" + tag, flops / (ms * 1e-3) / 1e12, "TFLOP/s", ms,
                         shape("causal prefill of %.0f tokens, 32 heads x 128, fp32", n)});
      }
    }
  }
  return out;
}

}  // namespace llmwb::cuda
