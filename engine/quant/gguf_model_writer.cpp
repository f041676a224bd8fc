#include "quant/gguf_model_writer.h"

#include <cstring>

#include "llmwb/errors.h"
#include "model/gguf_writer.h"

namespace llmwb {

namespace {

// llama.cpp's llama_ftype for the type most matrices have (general.file_type).
bool llama_ftype(const std::string& scheme, uint32_t* out) {
  if (scheme == "q8_0") *out = 7;           // LLAMA_FTYPE_MOSTLY_Q8_0
  else if (scheme == "q4_0") *out = 2;      // MOSTLY_Q4_0
  else if (scheme == "int4-g32") *out = 3;  // MOSTLY_Q4_1
  else return false;
  return true;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

void write_model_gguf(const ModelFile& file, const std::string& path, const std::string& scheme) {
  const ModelConfig& c = file.config;
  GgufWriter w;
  w.set_str("general.architecture", "llama");
  w.set_str("general.name", c.name.empty() ? "llama" : c.name);
  if (uint32_t ft; llama_ftype(scheme, &ft)) w.set_u32("general.file_type", ft);
  bool ggml_quant = false;
  for (const TensorView& t : file.tensors) ggml_quant |= t.dtype == DType::Q8_0 || t.dtype == DType::Q4_0 || t.dtype == DType::Q4_1;
  if (ggml_quant) w.set_u32("general.quantization_version", 2);
  if (!scheme.empty()) w.set_str("llmwb.quantization.scheme", scheme);
  w.set_u32("llama.context_length", static_cast<uint32_t>(c.max_seq_len));
  w.set_u32("llama.embedding_length", static_cast<uint32_t>(c.dim));
  w.set_u32("llama.block_count", static_cast<uint32_t>(c.n_layers));
  w.set_u32("llama.feed_forward_length", static_cast<uint32_t>(c.hidden_dim));
  w.set_u32("llama.attention.head_count", static_cast<uint32_t>(c.n_heads));
  w.set_u32("llama.attention.head_count_kv", static_cast<uint32_t>(c.n_kv_heads));
  w.set_u32("llama.attention.key_length", static_cast<uint32_t>(c.head_dim));
  w.set_u32("llama.attention.value_length", static_cast<uint32_t>(c.head_dim));
  w.set_u32("llama.rope.dimension_count", static_cast<uint32_t>(c.head_dim));
  w.set_f32("llama.rope.freq_base", c.rope_theta);
  w.set_f32("llama.attention.layer_norm_rms_epsilon", c.norm_eps);
  w.set_u32("llama.vocab_size", static_cast<uint32_t>(c.vocab_size));
  if (c.rope_scaling.type != "none") {
    if (c.rope_scaling.type != "linear") {
      throw Error(path, "rope scaling '" + c.rope_scaling.type + "' has no GGUF keys in this writer");
    }
    w.set_str("llama.rope.scaling.type", "linear");
    w.set_f32("llama.rope.scaling.factor", c.rope_scaling.factor);
  }
  const TokenizerData& v = file.tokenizer;
  if (!v.pieces.empty()) {
    w.set_str("tokenizer.ggml.model", v.model.empty() ? "llama" : v.model);
    w.set_str_array("tokenizer.ggml.tokens", v.pieces);
    if (!v.scores.empty()) w.set_f32_array("tokenizer.ggml.scores", v.scores);
    if (!v.types.empty()) w.set_i32_array("tokenizer.ggml.token_type", v.types);
    if (v.bos_id >= 0) w.set_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(v.bos_id));
    if (v.eos_id >= 0) w.set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(v.eos_id));
    if (v.unk_id >= 0) w.set_u32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(v.unk_id));
    if (v.pad_id >= 0) w.set_u32("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(v.pad_id));
    w.set_bool("tokenizer.ggml.add_bos_token", v.add_bos);
    if (!v.chat_template.empty()) w.set_str("tokenizer.chat_template", v.chat_template);
  }
  for (const TensorView& t : file.tensors) {
    // llama.cpp's convert permutes HF q/k rows so that RoPE pairs (2i, 2i+1); within each head,
    // GGUF row 2j + s is HF row s * hd/2 + j.
    int heads = 0;
    if (c.rope_layout == RopeLayout::RotateHalf) {
      if (ends_with(t.name, ".attn_q.weight")) heads = c.n_heads;
      if (ends_with(t.name, ".attn_k.weight")) heads = c.n_kv_heads;
    }
    if (heads == 0) {
      w.add_tensor(t.name, t.dtype, t.shape, t.data);
      continue;
    }
    const int hd = c.head_dim;
    w.add_tensor(t.name, t.dtype, t.shape, [t, heads, hd](uint8_t* dst) {
      const uint64_t rb = t.row_bytes();
      for (int h = 0; h < heads; ++h)
        for (int j = 0; j < hd / 2; ++j)
          for (int s = 0; s < 2; ++s)
            std::memcpy(dst + static_cast<uint64_t>(h * hd + 2 * j + s) * rb, t.row(h * hd + s * hd / 2 + j), rb);
    });
  }
  w.write(path);
}

}  // namespace llmwb
