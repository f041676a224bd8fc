#include "runner/weight_shards.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "llmwb/errors.h"

namespace llmwb {

namespace {

TensorView row_slice(const TensorView& t, int64_t r0, int64_t r1) {
  TensorView v = t;
  const uint64_t rb = t.row_bytes();
  v.shape[0] = r1 - r0;
  v.data = t.data + uint64_t(r0) * rb;
  v.nbytes = uint64_t(r1 - r0) * rb;
  v.name = t.name + "[rows " + std::to_string(r0) + ":" + std::to_string(r1) + "]";
  return v;
}

TensorView col_slice(const TensorView& t, int64_t c0, int64_t c1, WeightShard& shard) {
  const DTypeInfo& info = dtype_info(t.dtype);
  const int64_t be = info.block_elems, cols = t.cols();
  if (c0 % be != 0 || (c1 % be != 0 && c1 != cols))
    throw Error("tensor_parallel_size", "cannot split the columns of '" + t.name + "' (" + dtype_name(t.dtype) +
                                            ", blocks of " + std::to_string(be) + ") at " + std::to_string(c0) +
                                            ".." + std::to_string(c1) + ": not on a block boundary");
  const int64_t rows = t.rows();
  const uint64_t src_rb = t.row_bytes(), dst_rb = dtype_row_bytes(t.dtype, c1 - c0);
  const uint64_t header = uint64_t(info.row_header_bytes);
  const uint64_t offset = header + uint64_t(c0 / be) * uint64_t(info.block_bytes);
  const uint64_t bytes = dst_rb * uint64_t(rows);
  std::shared_ptr<uint8_t> buf(static_cast<uint8_t*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)), std::free);
  if (!buf) throw Error("tensor_parallel_size", "out of memory for a shard of '" + t.name + "'");
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* src = t.data + uint64_t(r) * src_rb;
    uint8_t* dst = buf.get() + uint64_t(r) * dst_rb;
    std::memcpy(dst, src, header);
    std::memcpy(dst + header, src + offset, dst_rb - header);
  }
  TensorView v = t;
  v.shape.back() = c1 - c0;
  v.data = buf.get();
  v.nbytes = bytes;
  v.name = t.name + "[cols " + std::to_string(c0) + ":" + std::to_string(c1) + "]";
  shard.owned.push_back(std::move(buf));
  return v;
}

std::vector<float> vec_slice(const std::vector<float>& v, int64_t a, int64_t b) {
  if (v.empty()) return {};
  return std::vector<float>(v.begin() + a, v.begin() + b);
}

}  // namespace

std::pair<int64_t, int64_t> split_range(int64_t total, int n, int i, int64_t align, const char* field,
                                        const char* what) {
  auto bound = [&](int k) -> int64_t {
    if (k >= n) return total;
    return total * k / n / align * align;
  };
  const int64_t a = bound(i), b = bound(i + 1);
  if (b <= a)
    throw Error(field, std::string("cannot split ") + what + " (" + std::to_string(total) +
                                            ", in steps of " + std::to_string(align) + ") into " +
                                            std::to_string(n) + " non-empty parts");
  return {a, b};
}

void check_parallel_layout(const ModelConfig& c, int tp, int pp) {
  if (tp < 1) throw Error("tensor_parallel_size", "must be >= 1, got " + std::to_string(tp));
  if (pp < 1) throw Error("pipeline_parallel_size", "must be >= 1, got " + std::to_string(pp));
  if (c.n_kv_heads % tp != 0)
    throw Error("tensor_parallel_size", std::to_string(tp) + " does not divide the model's " +
                                            std::to_string(c.n_kv_heads) +
                                            " KV heads (each rank holds whole KV heads and their query heads)");
  if (pp > c.n_layers)
    throw Error("pipeline_parallel_size", std::to_string(pp) + " stages for the model's " +
                                              std::to_string(c.n_layers) + " layers: at most one stage per layer");
}

WeightShard make_weight_shard(const ModelConfig& c, const LlamaWeights& w, const ShardSpec& s) {
  const int T = s.tp_size, t = s.tp_rank;
  if (T < 1 || c.n_kv_heads % T != 0)
    throw Error("tensor_parallel_size", std::to_string(T) + " does not divide the model's " +
                                            std::to_string(c.n_kv_heads) +
                                            " KV heads (each rank holds whole KV heads and their query heads)");
  if (s.first_layer < 0 || s.n_layers < 1 || s.first_layer + s.n_layers > c.n_layers)
    throw Error("pipeline_parallel_size", "a stage of layers " + std::to_string(s.first_layer) + " + " +
                                              std::to_string(s.n_layers) + " does not fit the model's " +
                                              std::to_string(c.n_layers) + " layers");
  WeightShard shard;
  ModelConfig& sc = shard.config;
  sc = c;
  const int64_t hd = c.head_dim;
  const int kv_per = c.n_kv_heads / T, q_per = c.n_heads / T;   // n_heads is a multiple of n_kv_heads
  const int64_t q0 = int64_t(t) * q_per * hd, q1 = q0 + q_per * hd;
  const int64_t k0 = int64_t(t) * kv_per * hd, k1 = k0 + kv_per * hd;
  sc.n_heads = q_per;
  sc.n_kv_heads = kv_per;
  sc.n_layers = s.n_layers;
  // The FFN's hidden units: w2's columns must split on its blocks.
  int64_t h_align = 1;
  if (!w.layers.empty()) h_align = dtype_info(w.layers[0].w2.dtype).block_elems;
  const auto [h0, h1] = T == 1 ? std::pair<int64_t, int64_t>{0, c.hidden_dim}
                               : split_range(c.hidden_dim, T, t, h_align, "tensor_parallel_size", "the feed-forward width");
  sc.hidden_dim = int(h1 - h0);
  const auto [v0, v1] = T == 1 ? std::pair<int64_t, int64_t>{0, c.vocab_size}
                               : split_range(c.vocab_size, T, t, 1, "tensor_parallel_size", "the vocabulary");
  sc.vocab_size = int(v1 - v0);
  shard.vocab_begin = int(v0);

  LlamaWeights& o = shard.weights;
  o.tok_embeddings = w.tok_embeddings;
  o.final_norm = w.final_norm;
  o.output = T == 1 ? w.output : row_slice(w.output, v0, v1);
  for (int l = s.first_layer; l < s.first_layer + s.n_layers; ++l) {
    const LlamaLayerWeights& L = w.layers[size_t(l)];
    if (T == 1) {
      o.layers.push_back(L);
      continue;
    }
    LlamaLayerWeights R;
    R.attn_norm = L.attn_norm;
    R.ffn_norm = L.ffn_norm;
    R.q_norm = L.q_norm;
    R.k_norm = L.k_norm;
    R.wq = row_slice(L.wq, q0, q1);
    R.wk = row_slice(L.wk, k0, k1);
    R.wv = row_slice(L.wv, k0, k1);
    R.bq = vec_slice(L.bq, q0, q1);
    R.bk = vec_slice(L.bk, k0, k1);
    R.bv = vec_slice(L.bv, k0, k1);
    R.wo = col_slice(L.wo, q0, q1, shard);
    R.w1 = row_slice(L.w1, h0, h1);
    R.w3 = row_slice(L.w3, h0, h1);
    R.w2 = col_slice(L.w2, h0, h1, shard);
    o.layers.push_back(std::move(R));
  }
  return shard;
}

}  // namespace llmwb
