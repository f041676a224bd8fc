#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <string>

#include "backend/cpu/attention.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/ops.h"
#include "llmwb/errors.h"

namespace llmwb {

CpuBackend::CpuBackend(int n_threads) : CpuBackend(n_threads, cpu::float_panels_enabled()) {}

CpuBackend::CpuBackend(int n_threads, bool float_panels)
    : pool_(n_threads), float_panels_(float_panels), scores_(static_cast<size_t>(pool_.size())),
      kv_rows_(static_cast<size_t>(pool_.size())),
      kv_decoded_(static_cast<size_t>(pool_.size())) {}

std::string CpuBackend::name() const {
  const int n = pool_.size();
  return std::string("cpu (") + cpu::simd_level_name(cpu::simd_level()) + ", " + std::to_string(n) +
         (n == 1 ? " thread)" : " threads)");
}

void CpuBackend::embed(const TensorView& table, const int* tokens, int n_rows, float* out) {
  const int64_t dim = table.cols();
  // A head tied to the embedding has a panel copy, and its mapped rows were handed back when
  // it was packed: read the copy (the same values) rather than fault the file's rows in again
  // (with fault-around, 64 KiB per row: most of a 98 MB llama-110m embedding after a prompt).
  if (const cpu::FloatPanels* p = repack_.find_panels(table)) {
    for (int r = 0; r < n_rows; ++r) cpu::panel_row(*p, tokens[r], out + r * dim);
    return;
  }
  for (int r = 0; r < n_rows; ++r) dequantize_row(table.dtype, table.row(tokens[r]), out + r * dim, dim);
}

void CpuBackend::rmsnorm(const float* x, const float* w, int n_rows, int dim, float eps, float* out) {
  auto body = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) cpu::rmsnorm(out + r * dim, x + r * dim, w, dim, eps);
  };
  // Prompt rows in parallel (each row's sum is one thread's, in order: the same result).
  if (int64_t(n_rows) * dim < (1 << 15)) body(0, n_rows);
  else pool_.parallel_for(n_rows, body, std::max<int64_t>(1, 4096 / std::max(dim, 1)));
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

const float* CpuBackend::rope_table(const RopeParams& rp, int max_pos) {
  const int half = rp.head_dim / 2;
  if (rope_freq_ != rp.inv_freq) {
    rope_freq_ = rp.inv_freq;
    rope_table_.clear();
    rope_positions_ = 0;
  }
  if (max_pos >= rope_positions_) {
    const int from = rope_positions_, to = max_pos + 1;
    rope_table_.resize(static_cast<size_t>(to) * 2 * half);
    pool_.parallel_for(
        to - from,
        [&](int64_t b, int64_t e) {
          for (int64_t p = from + b; p < from + e; ++p) {
            float* row = rope_table_.data() + p * 2 * half;
            for (int i = 0; i < half; ++i) {
              const double a = static_cast<double>(p) * rp.inv_freq[static_cast<size_t>(i)];
              row[i] = static_cast<float>(std::cos(a));
              row[half + i] = static_cast<float>(std::sin(a));
            }
          }
        },
        64);
    rope_positions_ = to;
  }
  return rope_table_.data();
}

void CpuBackend::rope(float* x, int n_rows, int n_heads, const int* positions, const RopeParams& rp) {
  const int hd = rp.head_dim, half = hd / 2;
  if (n_rows <= 0) return;
  int max_pos = 0;
  for (int r = 0; r < n_rows; ++r) {
    if (positions[r] < 0) throw Error("rope", "negative position " + std::to_string(positions[r]));
    max_pos = std::max(max_pos, positions[r]);
  }
  const float* table = rope_table(rp, max_pos);
  auto rows = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* cs = table + static_cast<size_t>(positions[r]) * 2 * half;
      const float* sn = cs + half;
      for (int h = 0; h < n_heads; ++h) {
        float* v = x + (r * n_heads + h) * hd;
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
  };
  // Rows are independent (each its own position), so splitting them changes no result.
  if (int64_t(n_rows) * n_heads * hd < (1 << 15)) rows(0, n_rows);
  else pool_.parallel_for(n_rows, rows, 16);
}

const std::vector<int64_t>& CpuBackend::slots_for(const ForwardBatch& batch, int bs) {
  if (batch.step != 0 && batch.step == slots_step_) return slots_;
  slots_.assign(batch.tokens.size(), 0);
  for (const ForwardSeq& s : batch.seqs)
    for (int i = 0; i < s.n_tokens; ++i) {
      const int pos = s.start_pos + i;
      slots_[static_cast<size_t>(s.first + i)] = int64_t((*s.block_table)[static_cast<size_t>(pos / bs)]) * bs + pos % bs;
    }
  slots_step_ = batch.step;
  return slots_;
}

void CpuBackend::store_kv(KVCache& cache, int layer, const ForwardBatch& batch, const float* k, const float* v) {
  const int64_t kv_dim = cache.kv_dim();
  const std::vector<int64_t>& slots = slots_for(batch, cache.block_size());
  for (size_t row = 0; row < slots.size(); ++row)
    cache.store(layer, slots[row], k + int64_t(row) * kv_dim, v + int64_t(row) * kv_dim);
}

// Paged attention on the CPU: one task per tile of queries that share their K/V rows: up to 4
// query heads of one KV head (grouped-query attention) for as many consecutive tokens of one
// sequence as make 16 queries (16 tokens without grouping, 8 with pairs, 4 with groups of 4 or
// more heads), so that cpu::attend_queries reads each K/V row once for all of them. Each reads
// K and V of positions 0..pos through its sequence's block table, so the cache never needs to
// be contiguous. Tasks are handed out on demand (an atomic counter, last tiles first), so that the
// long rows of a causal prefill spread over threads and a descheduled thread holds no share.
// An f16 or int8 cache's rows are decoded into a per-thread f32 scratch as they are gathered
// (exactly KVCache::load's values: the half as float, scale x code), so every cache type runs
// the same f32 kernels. A query's arithmetic (cpu::attend_queries, bitwise cpu::attend_head per
// query) depends only on its own token (q row, positions 0..pos), never on the rest of the
// batch, the queries it is tiled with or the thread that runs it, so attention is
// batch-invariant.
namespace {
constexpr int kMaxTileQueries = 16;   // queries in one attention task (cpu::attend_queries' lanes)
}  // namespace

// Every sequence's new tokens in tiles of `tile_tokens` consecutive tokens, and the longest
// context of the batch.
const std::vector<CpuBackend::AttentionTile>& CpuBackend::tiles_for(const ForwardBatch& batch, int tile_tokens,
                                                                    int* max_ctx) {
  if (batch.step == 0 || batch.step != tiles_step_ || tile_tokens != tiles_tokens_) {
    tiles_.clear();
    tiles_max_ctx_ = 0;
    for (size_t s = 0; s < batch.seqs.size(); ++s) {
      const ForwardSeq& fs = batch.seqs[s];
      for (int i = 0; i < fs.n_tokens; i += tile_tokens)
        tiles_.push_back({static_cast<int>(s), fs.first + i, std::min(tile_tokens, fs.n_tokens - i)});
      tiles_max_ctx_ = std::max(tiles_max_ctx_, fs.start_pos + fs.n_tokens);
    }
    tiles_step_ = batch.step;
    tiles_tokens_ = tile_tokens;
  }
  *max_ctx = tiles_max_ctx_;
  return tiles_;
}

void CpuBackend::attention(const KVCache& cache, int layer, const ForwardBatch& batch, const float* q,
                           const AttentionParams& p, float* out, AttentionRecord* record) {
  const int hd = p.head_dim, group = p.n_heads / p.n_kv_heads, bs = cache.block_size();
  const int q_dim = p.n_heads * hd;
  const bool int8 = cache.dtype() == KVDType::INT8, f16 = cache.dtype() == KVDType::F16;
  // hg consecutive query heads sharing a KV head, for tq consecutive tokens.
  const int hg = group % 4 == 0 ? 4 : group % 2 == 0 ? 2 : 1;
  const int tq = kMaxTileQueries / hg;
  const int n_groups = p.n_heads / hg;
  int max_ctx = 0;
  const std::vector<AttentionTile>& tiles = tiles_for(batch, tq, &max_ctx);
  const ForwardSeq* rec_seq = nullptr;
  for (const ForwardSeq& fs : batch.seqs)
    if (fs.capture_attention && record) rec_seq = &fs;
  if (rec_seq) {
    record->layer = layer;
    record->n_heads = p.n_heads;
    record->start_pos = rec_seq->start_pos;
    record->rows.assign(static_cast<size_t>(rec_seq->n_tokens) * p.n_heads, {});
  }
  const int per_task = hg * tq;   // queries per task, at most kMaxTileQueries
  const int64_t n_tasks = int64_t(tiles.size()) * n_groups;
  std::atomic<int64_t> next_task{0};
  pool_.run([&](int ith, int) {
    std::vector<float>& sc = scores_[static_cast<size_t>(ith)];
    if (sc.size() < static_cast<size_t>(per_task) * max_ctx) sc.resize(static_cast<size_t>(per_task) * max_ctx);
    std::vector<const float*>& rows = kv_rows_[static_cast<size_t>(ith)];
    if (rows.size() < 2 * static_cast<size_t>(max_ctx)) rows.resize(2 * static_cast<size_t>(max_ctx));
    const float** krows = rows.data();
    const float** vrows = rows.data() + max_ctx;
    // f16 / int8 cache: the head's K then V rows decoded to f32, which the f32 kernels read
    std::vector<float>& dec = kv_decoded_[static_cast<size_t>(ith)];
    if ((f16 || int8) && dec.size() < 2 * static_cast<size_t>(max_ctx) * hd)
      dec.resize(2 * static_cast<size_t>(max_ctx) * hd);
    int rows_seq = -1, rows_ctx = 0, rows_kvh = -1;   // the row arrays hold keys [0, rows_ctx) of this
    for (int64_t t = next_task.fetch_add(1, std::memory_order_relaxed); t < n_tasks;
         t = next_task.fetch_add(1, std::memory_order_relaxed)) {
      // Last tiles first: in a causal prefill they are the longest, so the short ones even out the end.
      const int64_t u = n_tasks - 1 - t;
      const AttentionTile& tile = tiles[static_cast<size_t>(u / n_groups)];
      const int h0 = static_cast<int>(u % n_groups) * hg;
      const ForwardSeq& fs = batch.seqs[static_cast<size_t>(tile.seq)];
      const int pos0 = fs.start_pos + (tile.first - fs.first);
      const int ctx_max = pos0 + tile.count;   // the tile's last token's context
      const int kvh = h0 / group;
      const int64_t kv_off = int64_t(kvh) * hd;
      const std::vector<int>& table = *fs.block_table;
      // The K/V rows of positions 0..ctx_max - 1, walked block by block (no division per key).
      // A thread's consecutive tasks are head groups of the same tile, so the arrays are
      // rebuilt only when the sequence or the KV head changes or the context grows: rows
      // built for a longer context of the same head serve a shorter one, as tiles come last
      // first (a 512-token prefill spent ~2 % of its time here, rebuilding them for every
      // head; an f16 cache converts its rows here).
      if (tile.seq != rows_seq || kvh != rows_kvh || ctx_max > rows_ctx) {
        // A block's rows of one layer are consecutive (kv_dim apart): its first slot's address
        // once, then steps.
        const int64_t kv_dim = cache.kv_dim();
        for (int j = 0, b = 0; j < ctx_max; ++b) {
          const int64_t base = int64_t(table[static_cast<size_t>(b)]) * bs;
          const int n = std::min(bs, ctx_max - j);
          if (int8 || f16) {
            for (int i = 0; i < n; ++i, ++j) {
              float* kf = dec.data() + int64_t(j) * hd;
              float* vf = dec.data() + (int64_t(max_ctx) + j) * hd;
              const int64_t slot = base + i;
              if (f16) {
                cpu::f16_to_f32(cache.k16(layer, slot) + kv_off, kf, hd);
                cpu::f16_to_f32(cache.v16(layer, slot) + kv_off, vf, hd);
              } else {
                cpu::i8_to_f32(cache.k8(layer, slot) + kv_off, cache.k_scale(layer, slot, kvh), kf, hd);
                cpu::i8_to_f32(cache.v8(layer, slot) + kv_off, cache.v_scale(layer, slot, kvh), vf, hd);
              }
              krows[j] = kf;
              vrows[j] = vf;
            }
          } else {
            const float* kb = cache.k(layer, base) + kv_off;
            const float* vb = cache.v(layer, base) + kv_off;
            for (int i = 0; i < n; ++i, ++j) {
              krows[j] = kb + i * kv_dim;
              vrows[j] = vb + i * kv_dim;
            }
          }
        }
        rows_seq = tile.seq;
        rows_kvh = kvh;
        rows_ctx = ctx_max;
      }
      const float* qh[kMaxTileQueries];
      float* oh[kMaxTileQueries];
      float* ph[kMaxTileQueries];
      int ctx[kMaxTileQueries];
      int nq = 0;
      for (int m = 0; m < tile.count; ++m) {
        const int row = tile.first + m;
        for (int g = 0; g < hg; ++g, ++nq) {
          qh[nq] = q + int64_t(row) * q_dim + int64_t(h0 + g) * hd;
          oh[nq] = out + int64_t(row) * q_dim + int64_t(h0 + g) * hd;
          ph[nq] = sc.data() + int64_t(nq) * max_ctx;
          ctx[nq] = pos0 + m + 1;
        }
      }
      // The weights are written out only for the sequence whose heatmap is captured.
      cpu::attend_queries(nq, qh, ctx, krows, vrows, hd, p.scale, rec_seq == &fs ? ph : nullptr, oh);
      if (rec_seq == &fs) {
        for (int m = 0, i = 0; m < tile.count; ++m) {
          for (int g = 0; g < hg; ++g, ++i) {
            record->rows[static_cast<size_t>(tile.first + m - fs.first) * p.n_heads + h0 + g].assign(ph[i],
                                                                                                  ph[i] + ctx[i]);
          }
        }
      }
    }
  });
}

// Element-wise work over [0, n): inline when small (a decode step's rows), else split over the pool.
void CpuBackend::elementwise(int64_t n, const std::function<void(int64_t, int64_t)>& body) {
  if (n < (1 << 15)) body(0, n);
  else pool_.parallel_for(n, body, 4096);
}

void CpuBackend::silu_mul(float* gate, const float* up, int64_t n) {
  elementwise(n, [&](int64_t b, int64_t e) { cpu::silu_mul(gate + b, up + b, e - b); });
}

void CpuBackend::add(float* y, const float* x, int64_t n) {
  elementwise(n, [&](int64_t b, int64_t e) { cpu::add_inplace(y + b, x + b, e - b); });
}

void CpuBackend::add_bias(float* y, const float* b, int n_rows, int width) {
  auto body = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) cpu::add_inplace(y + r * width, b, width);
  };
  if (int64_t(n_rows) * width < (1 << 15)) body(0, n_rows);
  else pool_.parallel_for(n_rows, body, std::max<int64_t>(1, 4096 / std::max(width, 1)));
}

}  // namespace llmwb
