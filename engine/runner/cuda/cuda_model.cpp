#include "runner/cuda/cuda_model.h"

#include <chrono>

#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>

#include "backend/backend.h"
#include "llmwb/errors.h"

namespace llmwb::cuda {

NvtxRange::NvtxRange(const char* name) { nvtxRangePushA(name); }
NvtxRange::~NvtxRange() { nvtxRangePop(); }

namespace {

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// Makes `device` the calling thread's current device (before the stream and the cuBLAS handle
// are made on it).
int select_device(int device) {
  LLMWB_CUDA(cudaSetDevice(device));
  return device;
}

}  // namespace

CudaModel::CudaModel(const ModelConfig& config, const LlamaWeights& w, const TuningConfig& tuning, int device)
    : c_(config),
      device_(select_device(device)),
      mm_(stream_.get()),
      use_graphs_(tuning.cuda_graphs),
      nvtx_layers_(tuning.nvtx_layers) {
  LLMWB_CUDA(cudaGetDeviceProperties(&prop_, device_));
  NvtxRange range("upload weights");
  tok_embeddings_ = upload(w.tok_embeddings);
  // Tied embeddings share one upload (not a tensor-parallel rank's vocabulary slice of them).
  output_ = w.output.data == w.tok_embeddings.data && w.output.dtype == w.tok_embeddings.dtype &&
                    w.output.rows() == w.tok_embeddings.rows()
                ? tok_embeddings_
                : upload(w.output);
  for (const LlamaLayerWeights& L : w.layers) {
    Layer d;
    d.attn_norm = upload_floats(L.attn_norm);
    d.ffn_norm = upload_floats(L.ffn_norm);
    d.wq = upload(L.wq), d.wk = upload(L.wk), d.wv = upload(L.wv), d.wo = upload(L.wo);
    d.w1 = upload(L.w1), d.w2 = upload(L.w2), d.w3 = upload(L.w3);
    if (config.attn_qkv_bias) d.bq = upload_floats(L.bq), d.bk = upload_floats(L.bk), d.bv = upload_floats(L.bv);
    if (config.attn_qk_norm) d.q_norm = upload_floats(L.q_norm), d.k_norm = upload_floats(L.k_norm);
    layers_.push_back(d);
  }
  final_norm_ = upload_floats(w.final_norm);
  const RopeParams rp = RopeParams::from(config);
  DeviceBuffer& f = weights_.emplace_back(sizeof(double) * std::max<size_t>(1, rp.inv_freq.size()));
  LLMWB_CUDA(cudaMemcpy(f.as(), rp.inv_freq.data(), sizeof(double) * rp.inv_freq.size(), cudaMemcpyHostToDevice));
  inv_freq_ = f.as<double>();
}

CudaModel::~CudaModel() { (void)cudaSetDevice(device_); }

DeviceMatrix CudaModel::upload(const TensorView& t) {
  if (!t.data) return {};   // a pipeline stage's model without the embedding or the head
  DeviceMatrix m;
  m.rows = t.rows();
  m.cols = t.cols();
  if (device_wtype(t.dtype, &m.type)) {
    // The cuBLAS path dequantizes these to fp16 scratch (CudaMatmul::reserve sizes it).
    if (m.type != WType::F32 && m.type != WType::F16 && m.type != WType::BF16)
      max_matrix_elems_ = std::max<int64_t>(max_matrix_elems_, m.rows * m.cols);
    m.row_bytes = static_cast<int64_t>(t.row_bytes());
    const uint64_t bytes = uint64_t(m.rows) * uint64_t(m.row_bytes);
    DeviceBuffer& b = weights_.emplace_back(bytes);
    LLMWB_CUDA(cudaMemcpy(b.as(), t.data, bytes, cudaMemcpyHostToDevice));
    weight_bytes_ += bytes;
    m.data = b.as();
    return m;
  }
  // k-quants and INT8_ASYM_ROW have no GPU kernel: F16 on the device (rows converted one by one).
  m.type = WType::F16;
  m.row_bytes = m.cols * 2;
  const uint64_t bytes = uint64_t(m.rows) * uint64_t(m.row_bytes);
  DeviceBuffer& b = weights_.emplace_back(bytes);
  std::vector<float> row(static_cast<size_t>(m.cols));
  std::vector<uint16_t> half(static_cast<size_t>(m.cols));
  for (int64_t r = 0; r < m.rows; ++r) {
    dequantize_row(t.dtype, t.row(r), row.data(), m.cols);
    for (size_t i = 0; i < row.size(); ++i) half[i] = fp32_to_fp16(row[i]);
    LLMWB_CUDA(cudaMemcpy(b.as<uint8_t>() + r * m.row_bytes, half.data(), static_cast<size_t>(m.row_bytes),
                          cudaMemcpyHostToDevice));
  }
  weight_bytes_ += bytes;
  m.data = b.as();
  return m;
}

const float* CudaModel::upload_floats(const std::vector<float>& v) {
  DeviceBuffer& b = weights_.emplace_back(sizeof(float) * std::max<size_t>(1, v.size()));
  LLMWB_CUDA(cudaMemcpy(b.as(), v.data(), sizeof(float) * v.size(), cudaMemcpyHostToDevice));
  weight_bytes_ += sizeof(float) * v.size();
  return b.as<float>();
}

std::string CudaModel::describe() const {
  char buf[512];
  const double gib = double(1u << 30), w = double(weight_bytes_);
  std::snprintf(buf, sizeof buf, "cuda: %s, %d SMs, %.1f GiB, weights %.*f %s", prop_.name, prop_.multiProcessorCount,
                double(prop_.totalGlobalMem) / gib, w < gib ? 1 : 2, w < gib ? w / (1u << 20) : w / gib,
                w < gib ? "MiB" : "GiB");
  return buf;
}

uint64_t CudaModel::free_memory_bytes() const {
  LLMWB_CUDA(cudaSetDevice(device_));
  size_t free_b = 0, total = 0;
  LLMWB_CUDA(cudaMemGetInfo(&free_b, &total));
  return free_b;
}

void CudaModel::allocate_kv(int num_blocks, int block_size, KVDType dtype) {
  LLMWB_CUDA(cudaSetDevice(device_));
  graphs_.clear();   // they hold the old pool's addresses and layer stride
  num_blocks_ = num_blocks;
  block_size_ = block_size;
  const KVDType kind = dtype;
  if (kind != KVDType::F32 && kind != KVDType::F16 && kind != KVDType::INT8)
    throw Error("cuda", "KV cache type " + std::to_string(int(dtype)) + " has no CUDA pool");
  const size_t slots = size_t(num_blocks) * size_t(block_size) * size_t(c_.n_layers);
  const size_t bytes = size_t(kv_elem_bytes(kind)) * slots * size_t(c_.n_kv_heads) * size_t(c_.head_dim);
  for (DeviceBuffer* b : {&k_pool_, &v_pool_, &k_scale_, &v_scale_}) b->reset();
  k_pool_.grow(bytes);
  v_pool_.grow(bytes);
  if (kind == KVDType::INT8) {
    k_scale_.grow(sizeof(float) * slots * size_t(c_.n_kv_heads));
    v_scale_.grow(sizeof(float) * slots * size_t(c_.n_kv_heads));
  }
  pool_ = KVPool{k_pool_.as(), v_pool_.as(), k_scale_.as<float>(), v_scale_.as<float>(), kind,
                 int64_t(num_blocks) * block_size, c_.n_kv_heads, c_.head_dim};
}

void CudaModel::ensure_rows(int n, int nl) {
  const int64_t dim = c_.dim, q_dim = int64_t(c_.n_heads) * c_.head_dim, kv_dim = int64_t(c_.n_kv_heads) * c_.head_dim;
  if (n > rows_cap_) {
    const size_t f = sizeof(float), rows = size_t(n);
    x_.grow(f * rows * dim), xb_.grow(f * rows * dim), xb2_.grow(f * rows * dim);
    q_.grow(f * rows * q_dim), att_.grow(f * rows * q_dim);
    k_.grow(f * rows * kv_dim), v_.grow(f * rows * kv_dim);
    hb_.grow(f * rows * c_.hidden_dim), hb2_.grow(f * rows * c_.hidden_dim);
    rows_cap_ = n;
  }
  if (nl > logit_rows_cap_) {
    const size_t f = sizeof(float), rows = size_t(nl);
    last_.grow(f * rows * dim), normed_.grow(f * rows * dim);
    logits_.grow(f * rows * c_.vocab_size);
    h_logits_.grow(f * rows * c_.vocab_size);
    logit_rows_cap_ = nl;
  }
}

void CudaModel::upload_metadata(const ForwardBatch& batch, int pad_to) {
  Meta& m = meta_;
  m = Meta{};
  const int real_rows = static_cast<int>(batch.tokens.size());
  const int real_seqs = static_cast<int>(batch.seqs.size());
  // Padding (graph replay): rows real_rows..pad_to-1 are one-token sequences of their own at
  // position 0, reading block 0 and writing no K/V; their outputs are never copied back.
  const int pad = std::max(0, pad_to - real_rows);
  m.n_rows = real_rows + pad;
  m.n_seqs = real_seqs + pad;
  m.n_logit_rows = batch.num_logit_rows + pad;
  const int group = c_.n_heads / c_.n_kv_heads;
  const int tile_rows = attention_tile_rows(group);
  std::vector<int> tokens(batch.tokens), positions(size_t(m.n_rows), 0), row_seq(size_t(m.n_rows)), seq_table, tables,
      tile_first, tile_n, logit_src(size_t(m.n_logit_rows), 0);
  std::vector<int64_t> slots(size_t(m.n_rows), -1);
  for (int s = 0; s < real_seqs; ++s) {
    const ForwardSeq& fs = batch.seqs[size_t(s)];
    const int ctx = fs.start_pos + fs.n_tokens;
    m.max_ctx = std::max(m.max_ctx, ctx);
    const int n_blocks = (ctx + block_size_ - 1) / block_size_;
    if (!fs.block_table || static_cast<int>(fs.block_table->size()) < n_blocks)
      throw Error("cuda forward", "sequence " + std::to_string(s) + " has a block table too short for " +
                                      std::to_string(ctx) + " tokens");
    seq_table.push_back(static_cast<int>(tables.size()));
    for (int b = 0; b < n_blocks; ++b) {
      const int id = (*fs.block_table)[size_t(b)];
      if (id < 0 || id >= num_blocks_) throw Error("cuda forward", "block id " + std::to_string(id) + " is outside the pool");
      tables.push_back(id);
    }
    for (int i = 0; i < fs.n_tokens; ++i) {
      const int row = fs.first + i, pos = fs.start_pos + i;
      positions[size_t(row)] = pos;
      row_seq[size_t(row)] = s;
      slots[size_t(row)] = int64_t((*fs.block_table)[size_t(pos / block_size_)]) * block_size_ + pos % block_size_;
    }
    for (int i = 0; i < fs.n_tokens; i += tile_rows) {
      tile_first.push_back(fs.first + i);
      tile_n.push_back(std::min(tile_rows, fs.n_tokens - i));
    }
    if (fs.logits_row >= 0) {
      const int first = fs.all_logits ? 0 : fs.n_tokens - 1;
      for (int i = first; i < fs.n_tokens; ++i) logit_src[size_t(fs.logits_row + i - first)] = fs.first + i;
    }
  }
  if (pad > 0) {
    const int zero_table = static_cast<int>(tables.size());
    tables.push_back(0);
    for (int i = 0; i < pad; ++i) {
      const int row = real_rows + i;
      tokens.push_back(0);
      row_seq[size_t(row)] = real_seqs + i;
      seq_table.push_back(zero_table);
      tile_first.push_back(row);
      tile_n.push_back(1);
    }
    m.max_ctx = std::max(m.max_ctx, 1);
  }
  m.n_tiles = static_cast<int>(tile_first.size());
  std::vector<int> lr_pos, lr_seq, lr_first, lr_rows;
  m.has_logit_batch = pad == 0 && m.n_logit_rows > 0;
  if (m.has_logit_batch)
    for (int i = 0; i < m.n_logit_rows; ++i) {
      const int r = logit_src[size_t(i)];
      lr_pos.push_back(positions[size_t(r)]);
      lr_seq.push_back(row_seq[size_t(r)]);
      lr_first.push_back(i);
      lr_rows.push_back(1);
    }
  // Pack: the int64 slots first, then int arrays whose sizes depend only on the row, sequence,
  // tile and logits counts, the block tables last, so that a padded decode batch of a given
  // size always has the same offsets (the graphs bake them in).
  size_t off = 0;
  auto place = [&](size_t count, size_t elem) {
    const size_t at = off;
    off += elem * count;
    return at;
  };
  m.slots = place(slots.size(), sizeof(int64_t));
  m.tokens = place(tokens.size(), sizeof(int));
  m.positions = place(positions.size(), sizeof(int));
  m.row_seq = place(row_seq.size(), sizeof(int));
  m.seq_table = place(seq_table.size(), sizeof(int));
  m.tile_first = place(tile_first.size(), sizeof(int));
  m.tile_rows = place(tile_n.size(), sizeof(int));
  m.logit_src = place(logit_src.size(), sizeof(int));
  m.tables = place(tables.size(), sizeof(int));
  m.lr_pos = place(lr_pos.size(), sizeof(int));
  m.lr_seq = place(lr_seq.size(), sizeof(int));
  m.lr_tile_first = place(lr_first.size(), sizeof(int));
  m.lr_tile_rows = place(lr_rows.size(), sizeof(int));
  m.bytes = std::max<size_t>(off, 8);
  h_meta_.grow(m.bytes);
  if (m.bytes > d_meta_.bytes()) {
    // A new device buffer moves every address a captured graph holds.
    graphs_.clear();
    d_meta_.grow(std::max(m.bytes, 2 * d_meta_.bytes()));
  }
  auto put = [&](size_t at, const auto& v) {
    if (!v.empty()) std::memcpy(h_meta_.as<uint8_t>() + at, v.data(), sizeof(v[0]) * v.size());
  };
  put(m.slots, slots);
  put(m.tokens, tokens);
  put(m.positions, positions);
  put(m.row_seq, row_seq);
  put(m.seq_table, seq_table);
  put(m.tile_first, tile_first);
  put(m.tile_rows, tile_n);
  put(m.logit_src, logit_src);
  put(m.tables, tables);
  put(m.lr_pos, lr_pos);
  put(m.lr_seq, lr_seq);
  put(m.lr_tile_first, lr_first);
  put(m.lr_tile_rows, lr_rows);
  LLMWB_CUDA(cudaMemcpyAsync(d_meta_.as(), h_meta_.as(), m.bytes, cudaMemcpyHostToDevice, stream_.get()));
}

void CudaModel::matmul(const DeviceMatrix& W, const float* x, int n, float* y) { mm_.run(W, x, n, y); }

namespace {

int next_pow2(int n) {
  int p = 1;
  while (p < n) p *= 2;
  return p;
}

}  // namespace

void CudaModel::forward(const ForwardBatch& batch, float* logits, int record_layer, AttentionRecord* record,
                        DeviceSampled* sampled) {
  const int n = static_cast<int>(batch.tokens.size());
  if (n == 0) return;
  if (num_blocks_ == 0) throw Error("cuda forward", "the KV pool is not allocated");
  LLMWB_CUDA(cudaSetDevice(device_));
  bool decode = true;
  int rec = -1;
  for (size_t s = 0; s < batch.seqs.size(); ++s) {
    decode = decode && batch.seqs[s].decode && batch.seqs[s].logits_row >= 0;
    if (batch.seqs[s].capture_attention && record && record_layer >= 0) rec = static_cast<int>(s);
  }
  NvtxRange phase(decode ? "decode" : "prefill");
  const ModelConfig& c = c_;
  const int nl = stage_to_ >= 0 ? 0 : batch.num_logit_rows;   // a stage that sends on computes no logits
  if (stage_to_ >= 0) sampled = nullptr;
  if (!tok_embeddings_.data && !(world_ && stage_from_ >= 0))
    throw Error("cuda forward", "this model holds no token embeddings (a later pipeline stage's)");
  if (nl > 0 && !output_.data) throw Error("cuda forward", "this model holds no output head (an earlier pipeline stage's)");
  const ForwardSeq* rs = rec >= 0 ? &batch.seqs[size_t(rec)] : nullptr;
  // Pure decode steps without attention capture replay a CUDA graph per (batch-size bucket,
  // context bucket): the batch is padded to the next power of two and attention is split as for
  // the context bucket's length, so one graph serves every step in its bucket.
  const bool graph = may_capture() && decode && !rs;
  const int rows = graph ? next_pow2(n) : n;
  upload_metadata(batch, rows);
  const int ctx_cap = graph ? std::max(256, next_pow2(meta_.max_ctx)) : meta_.max_ctx;
  ensure_rows(rows, graph ? rows : nl);
  const AttentionBatch ab = attention_batch(ctx_cap);
  attn_ws_floats_ = std::max<int64_t>(1, attention_workspace_floats(ab, attention_shape(), prop_.multiProcessorCount));
  if (!graph && trims_last_layer(n, nl, rs, record_layer))   // the logit rows' own splits
    attn_ws_floats_ = std::max(attn_ws_floats_, attention_workspace_floats(logit_attention_batch(ctx_cap), attention_shape(),
                                                                           prop_.multiProcessorCount));
  if (graph) {
    const uint64_t key = (uint64_t(rows) << 32) | uint32_t(ctx_cap);
    auto it = graphs_.find(key);
    if (it != graphs_.end() && it->second.stamp != buffer_stamp()) {
      graphs_.erase(it);   // a buffer it reads was reallocated since the capture
      it = graphs_.end();
    }
    if (it != graphs_.end()) {
      LLMWB_CUDA(cudaGraphLaunch(it->second.exec, stream_.get()));
    } else {
      // The first step of a bucket runs eagerly (it also sizes every buffer and sets kernel
      // attributes), then the same launches are captured for the next steps.
      attn_ws_.grow(sizeof(float) * size_t(attn_ws_floats_));
      mm_.reserve(rows, c.vocab_size, c.dim, c.hidden_dim, c.n_heads * c.head_dim, max_matrix_elems_);
      enqueue(ab, rows, rows, nullptr, -1, 0);
      capture(key, ab, rows);
    }
  } else {
    attn_ws_.grow(sizeof(float) * size_t(attn_ws_floats_));
    const int rec_stride = rs ? rs->start_pos + rs->n_tokens : 0;
    if (rs) weights_rec_.grow(sizeof(float) * size_t(rs->n_tokens) * c.n_heads * size_t(rec_stride));
    enqueue(ab, n, nl, rs, rs ? record_layer : -1, rec_stride);
  }
  const cudaStream_t s = stream_.get();
  // Rows sampled on the device (after the graph, never captured): the argmax kernel when every
  // such row is greedy, else the sampling kernel with each row's parameters; only the other
  // rows' logits cross the bus.
  const size_t V = size_t(c.vocab_size);
  std::vector<uint8_t> keep(size_t(std::max(nl, 0)), 1);   // logits rows to copy back
  auto kept_runs = [&](auto&& f) {   // f(first, end) per run of consecutive kept rows
    for (int r = 0; r < nl;) {
      if (!keep[size_t(r)]) {
        ++r;
        continue;
      }
      int e = r;
      while (e < nl && keep[size_t(e)]) ++e;
      f(r, e);
      r = e;
    }
  };
  int n_dev = 0;
  bool all_greedy = true;
  if (sampled && nl > 0) {
    if (sampled->rows.size() != size_t(nl) || sampled->params.size() != size_t(nl))
      throw Error("cuda forward", "device sampling: " + std::to_string(sampled->rows.size()) + " flags and " +
                                      std::to_string(sampled->params.size()) + " parameter sets for " +
                                      std::to_string(nl) + " logits rows");
    for (int r = 0; r < nl; ++r)
      if (sampled->rows[size_t(r)]) {
        keep[size_t(r)] = 0;
        ++n_dev;
        all_greedy = all_greedy && !(sampled->params[size_t(r)].temperature > 0.0f);
      }
  }
  if (n_dev > 0) {
    NvtxRange sample("sample");
    d_sampled_.grow(size_t(nl) * (sizeof(int) + sizeof(float)));
    h_sampled_.grow(size_t(nl) * (sizeof(int) + sizeof(float)));
    int* d_tok = d_sampled_.as<int>();
    float* d_prob = reinterpret_cast<float*>(d_tok + nl);
    if (all_greedy) {
      LLMWB_CUDA(argmax_rows(logits_.as<float>(), nl, c.vocab_size, d_tok, d_prob, s));
    } else {
      h_sparams_.grow(sizeof(RowSampling) * size_t(nl));
      d_sparams_.grow(sizeof(RowSampling) * size_t(nl));
      RowSampling* hp = h_sparams_.as<RowSampling>();
      for (int r = 0; r < nl; ++r)   // a host row's entry stays greedy: its argmax is unused
        hp[r] = sampled->rows[size_t(r)] ? sampled->params[size_t(r)] : RowSampling{};
      LLMWB_CUDA(cudaMemcpyAsync(d_sparams_.as(), hp, sizeof(RowSampling) * size_t(nl), cudaMemcpyHostToDevice, s));
      LLMWB_CUDA(sample_rows(logits_.as<float>(), nl, c.vocab_size, d_sparams_.as<RowSampling>(), d_tok, d_prob, s));
    }
    LLMWB_CUDA(cudaMemcpyAsync(h_sampled_.as(), d_tok, size_t(nl) * (sizeof(int) + sizeof(float)),
                               cudaMemcpyDeviceToHost, s));
  }
  if (nl > n_dev) {
    NvtxRange copy("copy logits");
    // One copy per run of kept rows (all rows: one copy).
    kept_runs([&](int r, int e) {
      LLMWB_CUDA(cudaMemcpyAsync(h_logits_.as<float>() + size_t(r) * V, logits_.as<float>() + size_t(r) * V,
                                 sizeof(float) * size_t(e - r) * V, cudaMemcpyDeviceToHost, s));
    });
  }
  const int rec_stride = rs ? rs->start_pos + rs->n_tokens : 0;
  const size_t rec_floats = rs ? size_t(rs->n_tokens) * c.n_heads * size_t(rec_stride) : 0;
  if (rs) {
    h_weights_rec_.grow(sizeof(float) * rec_floats);
    LLMWB_CUDA(cudaMemcpyAsync(h_weights_rec_.as(), weights_rec_.as(), sizeof(float) * rec_floats,
                               cudaMemcpyDeviceToHost, s));
  }
  // Also keeps the pinned metadata buffer from being overwritten while a copy may read it.
  stream_.sync();
  kept_runs([&](int r, int e) {
    std::memcpy(logits + size_t(r) * V, h_logits_.as<float>() + size_t(r) * V, sizeof(float) * size_t(e - r) * V);
  });
  if (n_dev > 0) {
    const int* tok = h_sampled_.as<int>();
    const float* prob = reinterpret_cast<const float*>(tok + nl);
    sampled->token.assign(tok, tok + nl);
    sampled->prob.assign(prob, prob + nl);
  }
  if (rs) {
    record->layer = record_layer;
    record->n_heads = c.n_heads;
    record->start_pos = rs->start_pos;
    record->rows.assign(size_t(rs->n_tokens) * c.n_heads, {});
    const float* w = h_weights_rec_.as<float>();
    for (int i = 0; i < rs->n_tokens; ++i)
      for (int h = 0; h < c.n_heads; ++h) {
        const float* row = w + (size_t(i) * c.n_heads + h) * size_t(rec_stride);
        record->rows[size_t(i) * c.n_heads + h].assign(row, row + rs->start_pos + i + 1);
      }
  }
}

AttentionShape CudaModel::attention_shape() const {
  AttentionShape sh;
  sh.n_heads = c_.n_heads;
  sh.n_kv_heads = c_.n_kv_heads;
  sh.head_dim = c_.head_dim;
  sh.block_size = block_size_;
  sh.scale = 1.0f / std::sqrt(static_cast<float>(c_.head_dim));
  return sh;
}

AttentionBatch CudaModel::attention_batch(int max_ctx) const {
  const uint8_t* dm = d_meta_.as<uint8_t>();
  auto ip = [&](size_t off) { return reinterpret_cast<const int*>(dm + off); };
  AttentionBatch ab;
  ab.n_rows = meta_.n_rows;
  ab.row_pos = ip(meta_.positions);
  ab.row_seq = ip(meta_.row_seq);
  ab.seq_table = ip(meta_.seq_table);
  ab.tables = ip(meta_.tables);
  ab.n_tiles = meta_.n_tiles;
  ab.tile_first = ip(meta_.tile_first);
  ab.tile_rows = ip(meta_.tile_rows);
  ab.max_ctx = max_ctx;
  return ab;
}

AttentionBatch CudaModel::logit_attention_batch(int max_ctx) const {
  AttentionBatch ab = attention_batch(max_ctx);
  const uint8_t* dm = d_meta_.as<uint8_t>();
  auto ip = [&](size_t off) { return reinterpret_cast<const int*>(dm + off); };
  ab.n_rows = meta_.n_logit_rows;
  ab.row_pos = ip(meta_.lr_pos);
  ab.row_seq = ip(meta_.lr_seq);
  ab.n_tiles = meta_.n_logit_rows;
  ab.tile_first = ip(meta_.lr_tile_first);
  ab.tile_rows = ip(meta_.lr_tile_rows);
  return ab;
}

bool CudaModel::trims_last_layer(int n, int nl, const ForwardSeq* rs, int record_layer) const {
  // A stage that sends its residual stream on needs every row of its last layer.
  return stage_to_ < 0 && nl < n && (nl == 0 || meta_.has_logit_batch) && !(rs && record_layer == c_.n_layers - 1);
}

// Every launch of one forward pass over `n` rows (metadata already on the device), ending
// with nl logits rows in logits_. Nothing here allocates or synchronizes: it is what a graph
// captures.
// The inspector's taps into one pass over one token: host copies of what each layer computed.
struct CudaModel::Tap {
  StepRecording& out;
  cudaStream_t s;
  int dim = 0, n_heads = 0, rec_stride = 0;
  std::vector<std::unique_ptr<Event>> events;   // before layer 0, after each layer, after the head
  std::vector<float> attn_res;                  // res after the attention's add, per layer
  void copy(const float* d, int n, std::vector<float>& h) {
    h.resize(size_t(n));
    LLMWB_CUDA(cudaMemcpyAsync(h.data(), d, sizeof(float) * size_t(n), cudaMemcpyDeviceToHost, s));
    LLMWB_CUDA(cudaStreamSynchronize(s));
  }
  void mark() {
    events.push_back(std::make_unique<Event>());
    events.back()->record(s);
  }
};

void CudaModel::enqueue(const AttentionBatch& ab, int n, int nl, const ForwardSeq* rs, int record_layer,
                        int rec_stride, Tap* tap) {
  const bool per_layer = nvtx_layers_;
  const cudaStream_t s = stream_.get();
  const ModelConfig& c = c_;
  const Meta& m = meta_;
  const uint8_t* dm = d_meta_.as<uint8_t>();
  auto ip = [&](size_t off) { return reinterpret_cast<const int*>(dm + off); };
  const AttentionShape sh = attention_shape();
  const int64_t dim = c.dim;
  float *x = x_.as<float>(), *xb = xb_.as<float>(), *xb2 = xb2_.as<float>(), *q = q_.as<float>(), *k = k_.as<float>(),
        *v = v_.as<float>(), *att = att_.as<float>(), *hb = hb_.as<float>(), *hb2 = hb2_.as<float>();
  if (world_ && stage_from_ >= 0)
    world_->recv(x, int64_t(n) * dim, stage_from_, s);
  else
    LLMWB_CUDA(embed(tok_embeddings_, ip(m.tokens), n, x, s));
  const float* pending = nullptr;   // the last block's output, still to be added to x
  const bool trim = trims_last_layer(n, nl, rs, record_layer);
  const bool interleaved = c.rope_layout == RopeLayout::Interleaved;
  if (tap) tap->mark();
  for (int l = 0; l < c.n_layers; ++l) {
    std::optional<NvtxRange> layer_range;
    if (per_layer) layer_range.emplace("layer");
    const Layer& L = layers_[size_t(l)];
    if (pending)
      LLMWB_CUDA(add_rmsnorm(x, pending, L.attn_norm, n, c.dim, c.norm_eps, xb, s));
    else
      LLMWB_CUDA(rmsnorm(x, L.attn_norm, n, c.dim, c.norm_eps, xb, s));
    // The last layer, trimmed (as LlamaModel::forward_logit_rows): every row's K and V are
    // written, then Q, attention, the output projection and the FFN run over the nl logit rows,
    // compacted (nothing, for a prefill chunk that samples no token).
    const bool trimmed = trim && l == c.n_layers - 1;
    if (trimmed) {
      const DeviceMatrix* kvm[2] = {&L.wk, &L.wv};
      float* out[2] = {k, v};
      mm_.run_stacked(kvm, out, 2, xb, n);
      finish_heads(k, n, c.n_kv_heads, L.bk, L.k_norm, s);
      LLMWB_CUDA(rope(k, nullptr, n, c.n_kv_heads, 0, c.head_dim, ab.row_pos, inv_freq_, interleaved, s));
    } else {
      const DeviceMatrix* qkv[3] = {&L.wq, &L.wk, &L.wv};
      float* out[3] = {q, k, v};
      mm_.run_stacked(qkv, out, 3, xb, n);
      finish_heads(q, n, c.n_heads, L.bq, L.q_norm, s);
      finish_heads(k, n, c.n_kv_heads, L.bk, L.k_norm, s);
      LLMWB_CUDA(rope(q, k, n, c.n_heads, c.n_kv_heads, c.head_dim, ab.row_pos, inv_freq_, interleaved, s));
    }
    if (c.attn_qkv_bias) LLMWB_CUDA(add_bias(v, L.bv, n, c.n_kv_heads * c.head_dim, s));
    const KVLayer kvl = kv_layer(pool_, l);
    LLMWB_CUDA(store_kv(pool_, l, k, v, reinterpret_cast<const int64_t*>(dm + m.slots), n, s));
    int rows = n;              // the rows that go on past K/V
    AttentionBatch at = ab;
    float* res = x;            // their residual stream
    if (trimmed) {
      if (nl == 0) return;
      rows = nl;
      at = logit_attention_batch(ab.max_ctx);
      res = last_.as<float>();
      const int* src = ip(m.logit_src);
      float* xl = hb_.as<float>();   // the logit rows' normed input
      LLMWB_CUDA(gather_rows(xb, src, nl, c.dim, xl, s));
      matmul(L.wq, xl, nl, q);
      finish_heads(q, nl, c.n_heads, L.bq, L.q_norm, s);
      LLMWB_CUDA(rope(q, nullptr, nl, c.n_heads, 0, c.head_dim, at.row_pos, inv_freq_, interleaved, s));
      LLMWB_CUDA(gather_rows(x, src, nl, c.dim, res, s));
    }
    if (rs && (l == record_layer || tap))   // trims_last_layer keeps the recorded layer whole
      LLMWB_CUDA(attention_naive(q, kvl, at, sh, att, weights_rec_.as<float>(), rs->first, rs->n_tokens, rec_stride, s));
    else
      LLMWB_CUDA(attention(q, kvl, at, sh, attn_ws_.as<float>(), prop_.multiProcessorCount, att, s));
    matmul(L.wo, att, rows, xb2);
    if (tp_) tp_->all_reduce_sum(xb2, int64_t(rows) * dim, s);
    if (tap) {
      StepRecording::Layer& rl = tap->out.layers[size_t(l)];
      tap->mark();   // the layer's time ends at its attention output (copies come after)
      std::vector<float> w;
      tap->copy(weights_rec_.as<float>(), c.n_heads * tap->rec_stride, w);
      rl.attention.layer = l;
      rl.attention.n_heads = c.n_heads;
      rl.attention.start_pos = tap->rec_stride - 1;
      rl.attention.rows.assign(size_t(c.n_heads), {});
      for (int h = 0; h < c.n_heads; ++h)
        rl.attention.rows[size_t(h)].assign(w.begin() + ptrdiff_t(h) * tap->rec_stride,
                                            w.begin() + ptrdiff_t(h + 1) * tap->rec_stride);
      tap->copy(xb2, c.dim, rl.attention_out);
      tap->mark();
    }
    LLMWB_CUDA(add_rmsnorm(res, xb2, L.ffn_norm, rows, c.dim, c.norm_eps, xb, s));
    mm_.run_swiglu(L.w1, L.w3, xb, rows, hb, hb2);
    matmul(L.w2, hb, rows, xb2);
    if (tp_) tp_->all_reduce_sum(xb2, int64_t(rows) * dim, s);
    pending = xb2;
    if (tap) {
      StepRecording::Layer& rl = tap->out.layers[size_t(l)];
      tap->mark();
      std::vector<float> r;
      tap->copy(res, c.dim, r);
      tap->copy(xb2, c.dim, rl.ffn_out);
      // The residual stream after the layer: what the next layer's fused add makes of it.
      rl.residual.resize(size_t(c.dim));
      for (int i = 0; i < c.dim; ++i) rl.residual[size_t(i)] = r[size_t(i)] + rl.ffn_out[size_t(i)];
      tap->mark();
    }
  }
  if (world_ && stage_to_ >= 0) {   // the residual stream to the next stage
    if (pending) LLMWB_CUDA(add(x, pending, int64_t(n) * dim, s));
    world_->send(x, int64_t(n) * dim, stage_to_, s);
    return;
  }
  if (nl > 0) {
    float* res = last_.as<float>();
    if (trim) {   // already the logit rows
      LLMWB_CUDA(add(res, pending, int64_t(nl) * dim, s));
    } else {
      if (pending) LLMWB_CUDA(add(x, pending, int64_t(n) * dim, s));
      LLMWB_CUDA(gather_rows(x, ip(m.logit_src), nl, c.dim, res, s));
    }
    LLMWB_CUDA(rmsnorm(res, final_norm_, nl, c.dim, c.norm_eps, normed_.as<float>(), s));
    matmul(output_, normed_.as<float>(), nl, logits_.as<float>());
  }
}

void CudaModel::finish_heads(float* x, int n, int heads, const float* bias, const float* norm, cudaStream_t s) {
  if (c_.attn_qkv_bias) LLMWB_CUDA(add_bias(x, bias, n, heads * c_.head_dim, s));
  if (c_.attn_qk_norm) LLMWB_CUDA(rmsnorm(x, norm, n * heads, c_.head_dim, c_.norm_eps, x, s));
}

void CudaModel::capture(uint64_t key, const AttentionBatch& ab, int rows) {
  const cudaStream_t s = stream_.get();
  cudaGraph_t g = nullptr;
  try {
    LLMWB_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    try {
      enqueue(ab, rows, rows, nullptr, -1, 0);
    } catch (...) {
      (void)cudaStreamEndCapture(s, &g);
      throw;
    }
    LLMWB_CUDA(cudaStreamEndCapture(s, &g));
    Graph graph;
    LLMWB_CUDA(cudaGraphInstantiate(&graph.exec, g, 0));
    graph.stamp = buffer_stamp();
    graphs_.emplace(key, std::move(graph));
  } catch (const Error& e) {
    // A launch that cannot be captured costs the speed-up, not the answer: run eagerly from now.
    std::fprintf(stderr, "llmwb: CUDA graphs disabled: %s\n", e.what());
    (void)cudaGetLastError();
    use_graphs_ = false;
    graphs_.clear();
  }
  if (g) (void)cudaGraphDestroy(g);
}

std::vector<const void*> CudaModel::buffer_stamp() const {
  std::vector<const void*> v{x_.as(),     xb_.as(),     xb2_.as(),     q_.as(),       k_.as(),
                             v_.as(),     att_.as(),    hb_.as(),      hb2_.as(),     last_.as(),
                             normed_.as(), logits_.as(), attn_ws_.as(), d_meta_.as(),  k_pool_.as(),
                             v_pool_.as(), k_scale_.as(), v_scale_.as()};
  const auto [a, b] = mm_.scratch();
  v.push_back(a);
  v.push_back(b);
  return v;
}

void CudaModel::inspect(const ForwardBatch& batch, float* logits, StepRecording& out) {
  if (batch.tokens.size() != 1 || batch.seqs.size() != 1 || batch.num_logit_rows != 1)
    throw Error("inspect", "records a batch of one new token with one logits row");
  if (num_blocks_ == 0) throw Error("cuda inspect", "the KV pool is not allocated");
  if (tp_ || world_) throw Error("inspect", "the token inspector records a model of one rank (tensor and pipeline "
                                            "parallel size 1)");
  LLMWB_CUDA(cudaSetDevice(device_));
  const ModelConfig& c = c_;
  const cudaStream_t s = stream_.get();
  const ForwardSeq& fs = batch.seqs[0];
  upload_metadata(batch, 1);
  ensure_rows(1, 1);
  const AttentionBatch ab = attention_batch(meta_.max_ctx);
  attn_ws_floats_ = std::max<int64_t>(1, attention_workspace_floats(ab, attention_shape(), prop_.multiProcessorCount));
  attn_ws_.grow(sizeof(float) * size_t(attn_ws_floats_));
  const int rec_stride = fs.start_pos + 1;
  weights_rec_.grow(sizeof(float) * size_t(c.n_heads) * size_t(rec_stride));
  out.layers.assign(size_t(c.n_layers), {});
  Tap tap{out, s, c.dim, c.n_heads, rec_stride, {}, {}};
  const auto t0 = std::chrono::steady_clock::now();
  enqueue(ab, 1, 1, &fs, -1, rec_stride, &tap);
  tap.mark();
  const size_t V = size_t(c.vocab_size);
  LLMWB_CUDA(cudaMemcpyAsync(logits, logits_.as<float>(), sizeof(float) * V, cudaMemcpyDeviceToHost, s));
  stream_.sync();
  out.forward_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Device time per layer (events around its launches, the host copies left out), then the head.
  // Marks: 0 before layer 0; per layer 4 (end of attention, after its copies, end of FFN, after
  // its copies); one after the head.
  for (int l = 0; l < c.n_layers; ++l) {
    const Event& start = *tap.events[size_t(l == 0 ? 0 : 4 * l)];
    const double attn_ms = tap.events[size_t(4 * l + 1)]->ms_since(start);
    const double ffn_ms = tap.events[size_t(4 * l + 3)]->ms_since(*tap.events[size_t(4 * l + 2)]);
    out.ops[{l, "attention block"}] = {attn_ms / 1e3, 1};
    out.ops[{l, "ffn block"}] = {ffn_ms / 1e3, 1};
  }
  out.ops[{-1, "final norm + head"}] = {tap.events.back()->ms_since(*tap.events[size_t(4 * c.n_layers)]) / 1e3, 1};
  // The logit lens: the same final norm and head over each layer's residual, one row at a time
  // as the pass ran it.
  float* row = last_.as<float>();
  for (StepRecording::Layer& L : out.layers) {
    LLMWB_CUDA(cudaMemcpyAsync(row, L.residual.data(), sizeof(float) * size_t(c.dim), cudaMemcpyHostToDevice, s));
    LLMWB_CUDA(rmsnorm(row, final_norm_, 1, c.dim, c.norm_eps, normed_.as<float>(), s));
    matmul(output_, normed_.as<float>(), 1, logits_.as<float>());
    L.lens_logits.resize(V);
    LLMWB_CUDA(cudaMemcpyAsync(L.lens_logits.data(), logits_.as<float>(), sizeof(float) * V, cudaMemcpyDeviceToHost, s));
    stream_.sync();
  }
}

CudaModel::Graph::~Graph() {
  if (exec) (void)cudaGraphExecDestroy(exec);
}

void CudaModel::copy_blocks(const std::vector<std::pair<int, int>>& src_dst) {
  if (src_dst.empty()) return;
  LLMWB_CUDA(cudaSetDevice(device_));
  std::vector<int> pairs;
  for (auto [a, b] : src_dst) {
    if (a < 0 || a >= num_blocks_ || b < 0 || b >= num_blocks_)
      throw Error("cuda copy_blocks", "block " + std::to_string(a) + " -> " + std::to_string(b) + " is outside the pool");
    pairs.push_back(a);
    pairs.push_back(b);
  }
  d_pairs_.grow(sizeof(int) * pairs.size());
  LLMWB_CUDA(cudaMemcpyAsync(d_pairs_.as(), pairs.data(), sizeof(int) * pairs.size(), cudaMemcpyHostToDevice,
                             stream_.get()));
  LLMWB_CUDA(llmwb::cuda::copy_blocks(pool_, c_.n_layers, block_size_, d_pairs_.as<int>(),
                                      static_cast<int>(src_dst.size()), stream_.get()));
  // `pairs` is pageable host memory read by the copy: wait before it goes out of scope.
  stream_.sync();
}

}  // namespace llmwb::cuda
