#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/attention.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/ops.h"

namespace llmwb {

CpuBackend::CpuBackend(int n_threads)
    : pool_(n_threads), float_panels_(cpu::float_panels_enabled()), scores_(static_cast<size_t>(pool_.size())),
      kv_rows_(static_cast<size_t>(pool_.size())),
      kv_rows8_(static_cast<size_t>(pool_.size())),
      kv_scales_(static_cast<size_t>(pool_.size())) {}

std::string CpuBackend::name() const {
  return std::string("cpu (") + cpu::simd_level_name(cpu::simd_level()) + ", " + std::to_string(pool_.size()) +
         " threads)";
}

void CpuBackend::embed(const TensorView& table, const int* tokens, int n_rows, float* out) {
  const int64_t dim = table.cols();
  for (int r = 0; r < n_rows; ++r) dequantize_row(table.dtype, table.row(tokens[r]), out + r * dim, dim);
}

void CpuBackend::rmsnorm(const float* x, const float* w, int n_rows, int dim, float eps, float* out) {
  for (int r = 0; r < n_rows; ++r) cpu::rmsnorm(out + int64_t(r) * dim, x + int64_t(r) * dim, w, dim, eps);
}

bool CpuBackend::use_panels(const TensorView& W) const {
  return float_panels_ && cpu::panel_dtype(W.dtype) && cpu::panel_kernels_active();
}

void CpuBackend::prepare(const TensorView& W) {
  if (use_panels(W)) repack_.panels(W, pool_);
  else repack_.get(W, pool_);
}

void CpuBackend::matmul(const TensorView& W, const float* x, int n_rows, float* y) {
  if (const cpu::PackedQ4* p = repack_.get(W, pool_)) {
    cpu::qmatmul_packed(pool_, *p, x, n_rows, y);
    return;
  }
  if (use_panels(W)) {
    cpu::panel_matmul(pool_, *repack_.panels(W, pool_), x, n_rows, y);
    return;
  }
  cpu::matmul(pool_, W, x, n_rows, y);
}

void CpuBackend::matmul_shared_input(const float* x, int n_rows, std::span<const MatmulOut> outs) {
  constexpr size_t kMax = 8;
  // Float weights over panels: x packed once for all of them.
  cpu::PanelOut pouts[kMax];
  bool panels = outs.size() <= kMax;
  for (size_t i = 0; panels && i < outs.size(); ++i) {
    panels = use_panels(*outs[i].W) && outs[i].W->cols() == outs[0].W->cols();
    if (panels) pouts[i] = {repack_.panels(*outs[i].W, pool_), outs[i].y};
  }
  if (panels) {
    cpu::panel_matmul_multi(pool_, std::span<const cpu::PanelOut>(pouts, outs.size()), x, n_rows);
    return;
  }
  cpu::PackedOut packed[kMax];
  bool fused = outs.size() <= kMax;
  for (size_t i = 0; fused && i < outs.size(); ++i) {
    packed[i] = {repack_.get(*outs[i].W, pool_), outs[i].y};
    fused = packed[i].W && packed[i].W->cols == packed[0].W->cols;
  }
  if (fused) cpu::qmatmul_packed_multi(pool_, std::span<const cpu::PackedOut>(packed, outs.size()), x, n_rows);
  else Backend::matmul_shared_input(x, n_rows, outs);
}

void CpuBackend::rope(float* x, int n_rows, int n_heads, const int* positions, const RopeParams& rp) {
  const int hd = rp.head_dim, half = hd / 2;
  std::vector<float> cs(static_cast<size_t>(half)), sn(static_cast<size_t>(half));
  for (int r = 0; r < n_rows; ++r) {
    for (int i = 0; i < half; ++i) {
      const double a = positions[r] * rp.inv_freq[static_cast<size_t>(i)];
      cs[static_cast<size_t>(i)] = static_cast<float>(std::cos(a));
      sn[static_cast<size_t>(i)] = static_cast<float>(std::sin(a));
    }
    for (int h = 0; h < n_heads; ++h) {
      float* v = x + (int64_t(r) * n_heads + h) * hd;
      if (rp.layout == RopeLayout::Interleaved) {
        for (int i = 0; i < half; ++i) {
          const float x0 = v[2 * i], x1 = v[2 * i + 1];
          v[2 * i] = x0 * cs[i] - x1 * sn[i];
          v[2 * i + 1] = x0 * sn[i] + x1 * cs[i];
        }
      } else {
        for (int i = 0; i < half; ++i) {
          const float x0 = v[i], x1 = v[i + half];
          v[i] = x0 * cs[i] - x1 * sn[i];
          v[i + half] = x0 * sn[i] + x1 * cs[i];
        }
      }
    }
  }
}

void CpuBackend::store_kv(KVCache& cache, int layer, const ForwardBatch& batch, const float* k, const float* v) {
  const int bs = cache.block_size(), kv_dim = cache.kv_dim();
  for (const ForwardSeq& s : batch.seqs) {
    for (int i = 0; i < s.n_tokens; ++i) {
      const int pos = s.start_pos + i;
      const int64_t slot = int64_t((*s.block_table)[static_cast<size_t>(pos / bs)]) * bs + pos % bs;
      const int64_t row = s.first + i;
      cache.store(layer, slot, k + row * kv_dim, v + row * kv_dim);
    }
  }
}

// Paged attention on the CPU: one task per (new token, up to 4 query heads sharing a KV
// head); each reads K and V of positions 0..pos through its sequence's block table, so the
// cache never needs to be contiguous. Tasks are dealt round-robin so that the long rows of a
// causal prefill spread over threads. A head's arithmetic (cpu::attend_heads, bitwise
// cpu::attend_head per head, or cpu::attend_head_i8 over an int8 cache) depends only on its
// own token (q row, positions 0..pos), never on the rest of the batch, the heads it is grouped
// with or the thread that runs it, so attention is batch-invariant.
void CpuBackend::attention(const KVCache& cache, int layer, const ForwardBatch& batch, const float* q,
                           const AttentionParams& p, float* out, AttentionRecord* record) {
  const int n_rows = static_cast<int>(batch.tokens.size());
  const int hd = p.head_dim, group = p.n_heads / p.n_kv_heads, bs = cache.block_size();
  const int q_dim = p.n_heads * hd;
  const bool int8 = cache.dtype() == KVDType::INT8;
  std::vector<int> row_seq(static_cast<size_t>(n_rows));
  int max_ctx = 0;
  const ForwardSeq* rec_seq = nullptr;
  for (size_t s = 0; s < batch.seqs.size(); ++s) {
    const ForwardSeq& fs = batch.seqs[s];
    for (int i = 0; i < fs.n_tokens; ++i) row_seq[static_cast<size_t>(fs.first + i)] = static_cast<int>(s);
    max_ctx = std::max(max_ctx, fs.start_pos + fs.n_tokens);
    if (fs.capture_attention && record) rec_seq = &fs;
  }
  if (rec_seq) {
    record->layer = layer;
    record->n_heads = p.n_heads;
    record->start_pos = rec_seq->start_pos;
    record->rows.assign(static_cast<size_t>(rec_seq->n_tokens) * p.n_heads, {});
  }
  // A task is `hg` consecutive query heads of one token that share a KV head, so that
  // attend_heads reads each K/V row once for all of them (grouped-query attention).
  const int hg = group % 4 == 0 ? 4 : group % 2 == 0 ? 2 : 1;
  const int n_groups = p.n_heads / hg;
  const int64_t n_tasks = int64_t(n_rows) * n_groups;
  pool_.run([&](int ith, int nth) {
    std::vector<float>& sc = scores_[static_cast<size_t>(ith)];
    if (sc.size() < static_cast<size_t>(hg) * max_ctx) sc.resize(static_cast<size_t>(hg) * max_ctx);
    std::vector<const float*>& rows = kv_rows_[static_cast<size_t>(ith)];
    if (rows.size() < 2 * static_cast<size_t>(max_ctx)) rows.resize(2 * static_cast<size_t>(max_ctx));
    const float** krows = rows.data();
    const float** vrows = rows.data() + max_ctx;
    // int8 cache: code row pointers and the slot-heads' scales
    std::vector<const int8_t*>& rows8 = kv_rows8_[static_cast<size_t>(ith)];
    std::vector<float>& scales = kv_scales_[static_cast<size_t>(ith)];
    if (int8 && rows8.size() < 2 * static_cast<size_t>(max_ctx)) {
      rows8.resize(2 * static_cast<size_t>(max_ctx));
      scales.resize(2 * static_cast<size_t>(max_ctx));
    }
    const int8_t** krows8 = rows8.data();
    const int8_t** vrows8 = krows8 + (int8 ? max_ctx : 0);
    float* kscale = scales.data();
    float* vscale = kscale + (int8 ? max_ctx : 0);
    int rows_of = -1, rows_kvh = -1;   // the (token row, KV head) the row arrays now hold
    for (int64_t t = ith; t < n_tasks; t += nth) {
      const int row = static_cast<int>(t / n_groups), h0 = static_cast<int>(t % n_groups) * hg;
      const ForwardSeq& fs = batch.seqs[static_cast<size_t>(row_seq[static_cast<size_t>(row)])];
      const int pos = fs.start_pos + (row - fs.first);
      const int ctx = pos + 1;
      const int kvh = h0 / group;
      const int64_t kv_off = int64_t(kvh) * hd;
      const std::vector<int>& table = *fs.block_table;
      // The K/V rows of positions 0..pos, walked block by block (no division per key). The
      // query heads of one KV head share them, and a thread's consecutive tasks are head groups
      // of the same token, so the arrays are rebuilt only when the token or the KV head changes
      // (a 512-token prefill spent ~2 % of its time here, rebuilding them for every head).
      if (row != rows_of || kvh != rows_kvh) {
        for (int j = 0, b = 0; j < ctx; ++b) {
          const int64_t base = int64_t(table[static_cast<size_t>(b)]) * bs;
          for (int i = 0; i < bs && j < ctx; ++i, ++j) {
            const int64_t slot = base + i;
            if (int8) {
              krows8[j] = cache.k8(layer, slot) + kv_off;
              vrows8[j] = cache.v8(layer, slot) + kv_off;
              kscale[j] = cache.k_scale(layer, slot, kvh);
              vscale[j] = cache.v_scale(layer, slot, kvh);
            } else {
              krows[j] = cache.k(layer, slot) + kv_off;
              vrows[j] = cache.v(layer, slot) + kv_off;
            }
          }
        }
        rows_of = row;
        rows_kvh = kvh;
      }
      const float* qh[4];
      float* oh[4];
      float* ph[4];
      for (int g = 0; g < hg; ++g) {
        qh[g] = q + int64_t(row) * q_dim + int64_t(h0 + g) * hd;
        oh[g] = out + int64_t(row) * q_dim + int64_t(h0 + g) * hd;
        ph[g] = sc.data() + int64_t(g) * max_ctx;
      }
      if (int8) {
        for (int g = 0; g < hg; ++g)
          cpu::attend_head_i8(qh[g], krows8, kscale, vrows8, vscale, ctx, hd, p.scale, ph[g], oh[g]);
      } else {
        cpu::attend_heads(hg, qh, krows, vrows, ctx, hd, p.scale, ph, oh);
      }
      if (rec_seq == &fs) {
        for (int g = 0; g < hg; ++g)
          record->rows[static_cast<size_t>(row - fs.first) * p.n_heads + h0 + g].assign(ph[g], ph[g] + ctx);
      }
    }
  });
}

void CpuBackend::silu_mul(float* gate, const float* up, int64_t n) {
  auto body = [&](int64_t b, int64_t e) { cpu::silu_mul(gate + b, up + b, e - b); };
  if (n < (1 << 15)) body(0, n);
  else pool_.parallel_for(n, body, 4096);
}

void CpuBackend::add(float* y, const float* x, int64_t n) { cpu::add_inplace(y, x, n); }

}  // namespace llmwb
