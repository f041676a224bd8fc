#include "model/llama_weights.h"

#include <string>

#include "llmwb/errors.h"

namespace llmwb {
namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "{";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "}";
}

const TensorView& expect(const ModelFile& f, const std::string& name, std::vector<int64_t> shape) {
  const TensorView& t = f.get(name);
  if (t.shape != shape)
    throw Error(f.path, "tensor '" + name + "' has shape " + shape_str(t.shape) + ", expected " + shape_str(shape));
  return t;
}

std::vector<float> to_f32(const ModelFile& f, const std::string& name, int64_t n) {
  if (!f.find(name))
    throw Error(f.path, "missing tensor '" + name + "' (" + f.config.architecture + " needs it)");
  const TensorView& t = expect(f, name, {n});
  std::vector<float> v(static_cast<size_t>(n));
  dequantize_row(t.dtype, t.data, v.data(), n);
  return v;
}

}  // namespace

LlamaWeights LlamaWeights::bind(const ModelFile& f) {
  const ModelConfig& c = f.config;
  const int64_t dim = c.dim, hd = c.head_dim, q_dim = int64_t(c.n_heads) * hd, kv_dim = int64_t(c.n_kv_heads) * hd;
  LlamaWeights w;
  w.tok_embeddings = expect(f, "token_embd.weight", {c.vocab_size, dim});
  w.layers.resize(static_cast<size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LlamaLayerWeights& L = w.layers[static_cast<size_t>(l)];
    L.attn_norm = to_f32(f, p + "attn_norm.weight", dim);
    L.wq = expect(f, p + "attn_q.weight", {q_dim, dim});
    L.wk = expect(f, p + "attn_k.weight", {kv_dim, dim});
    L.wv = expect(f, p + "attn_v.weight", {kv_dim, dim});
    L.wo = expect(f, p + "attn_output.weight", {dim, q_dim});
    if (c.attn_qkv_bias) {
      L.bq = to_f32(f, p + "attn_q.bias", q_dim);
      L.bk = to_f32(f, p + "attn_k.bias", kv_dim);
      L.bv = to_f32(f, p + "attn_v.bias", kv_dim);
    }
    if (c.attn_qk_norm) {
      L.q_norm = to_f32(f, p + "attn_q_norm.weight", hd);
      L.k_norm = to_f32(f, p + "attn_k_norm.weight", hd);
    }
    L.ffn_norm = to_f32(f, p + "ffn_norm.weight", dim);
    L.w1 = expect(f, p + "ffn_gate.weight", {c.hidden_dim, dim});
    L.w2 = expect(f, p + "ffn_down.weight", {dim, c.hidden_dim});
    L.w3 = expect(f, p + "ffn_up.weight", {c.hidden_dim, dim});
  }
  w.final_norm = to_f32(f, "output_norm.weight", dim);
  if (f.find("output.weight"))
    w.output = expect(f, "output.weight", {c.vocab_size, dim});
  else
    w.output = w.tok_embeddings;
  return w;
}

}  // namespace llmwb
