// model_info.cpp — describe_model(): a ModelFile and its tokenizer as a ModelInfo.
#include <algorithm>
#include <cstdio>
#include <map>

#include "model/model_describe.h"
#include "tokenizer/tokenizer.h"

namespace llmwb {

namespace {

// "none", "linear x4", "llama3 x32"; a GGUF's Llama 3 scaling, which travels as per-pair
// divisors (rope_freqs.weight), as "rope_freqs x1-32" (the smallest and largest divisor).
std::string rope_scaling_text(const RopeScaling& s, const std::vector<float>& freq_factors) {
  char buf[64];
  if (!freq_factors.empty()) {
    const auto [lo, hi] = std::minmax_element(freq_factors.begin(), freq_factors.end());
    std::snprintf(buf, sizeof buf, "rope_freqs x%g-%g", static_cast<double>(*lo), static_cast<double>(*hi));
    return s.type == "none" || s.type.empty() ? std::string(buf) : rope_scaling_text(s, {}) + ", " + buf;
  }
  if (s.type == "none" || s.type.empty()) return "none";
  std::snprintf(buf, sizeof buf, "%s x%g", s.type.c_str(), static_cast<double>(s.factor));
  return buf;
}

}  // namespace

ModelInfo describe_model(const ModelFile& file, const Tokenizer* tok) {
  const ModelConfig& c = file.config;
  ModelInfo info;
  info.path = file.path;
  info.format = file.format;
  info.architecture = c.architecture;
  info.name = c.name;
  info.dim = c.dim;
  info.hidden_dim = c.hidden_dim;
  info.n_layers = c.n_layers;
  info.n_heads = c.n_heads;
  info.n_kv_heads = c.n_kv_heads;
  info.head_dim = c.head_dim;
  info.vocab_size = c.vocab_size;
  info.context_length = c.max_seq_len;
  info.trained_context_length = c.max_seq_len;
  info.rope_theta = c.rope_theta;
  info.norm_eps = c.norm_eps;
  info.rope_layout = c.rope_layout == RopeLayout::Interleaved ? "interleaved" : "rotate-half";
  info.rope_scaling = rope_scaling_text(c.rope_scaling, c.rope_freq_factors);
  info.tied_embeddings = c.tied_embeddings;
  info.qkv_bias = c.attn_qkv_bias;
  info.qk_norm = c.attn_qk_norm;

  std::map<std::string, int> per_dtype;
  for (const auto& t : file.tensors) {
    TensorInfo ti;
    ti.name = t.name;
    ti.dtype = dtype_name(t.dtype);
    ti.shape = t.shape;
    ti.nbytes = t.nbytes;
    info.n_params += static_cast<uint64_t>(t.numel());
    info.weight_bytes += t.nbytes;
    ++per_dtype[ti.dtype];
    info.tensors.push_back(std::move(ti));
  }
  // Most common type first: "F16 (201 tensors), F32 (45 tensors)".
  std::vector<std::pair<std::string, int>> order(per_dtype.begin(), per_dtype.end());
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [name, n] : order) {
    if (!info.dtype_summary.empty()) info.dtype_summary += ", ";
    info.dtype_summary += name + " (" + std::to_string(n) + (n == 1 ? " tensor)" : " tensors)");
  }

  const TokenizerData& td = file.tokenizer;
  if (tok) {
    info.tokenizer_kind = tok->kind();
    info.tokenizer_vocab = tok->vocab_size();
    info.bos_id = tok->bos_id();
    info.eos_id = tok->eos_id();
  } else if (!td.pieces.empty()) {
    info.tokenizer_kind = "llama-bpe (from " + file.format + ")";
    info.tokenizer_vocab = static_cast<int>(td.pieces.size());
    info.bos_id = td.bos_id >= 0 ? td.bos_id : c.bos_id;
    info.eos_id = td.eos_id >= 0 ? td.eos_id : c.eos_id;
  } else {
    info.tokenizer_kind = td.sp_model_path.empty() ? "none" : "sentencepiece";
    info.bos_id = c.bos_id;
    info.eos_id = c.eos_id;
  }
  info.tokenizer_path = !td.sp_model_path.empty() ? td.sp_model_path : td.source;
  info.chat_template = td.chat_template;
  info.metadata = file.metadata;
  return info;
}

}  // namespace llmwb
