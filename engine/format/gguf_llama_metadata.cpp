#include "format/gguf_llama_metadata.h"

#include "format/rope_params.h"
#include "llmwb/errors.h"

namespace llmwb {

void set_llama_gguf_metadata(GgufWriter& w, const ModelConfig& c, const TokenizerData& v, const std::string& where) {
  // The model keys are prefixed by the architecture, as llama.cpp writes them (qwen3.context_length).
  const std::string a = c.architecture + ".";
  w.set_str("general.architecture", c.architecture);
  w.set_u32(a + "context_length", static_cast<uint32_t>(c.max_seq_len));
  w.set_u32(a + "embedding_length", static_cast<uint32_t>(c.dim));
  w.set_u32(a + "block_count", static_cast<uint32_t>(c.n_layers));
  w.set_u32(a + "feed_forward_length", static_cast<uint32_t>(c.hidden_dim));
  w.set_u32(a + "attention.head_count", static_cast<uint32_t>(c.n_heads));
  w.set_u32(a + "attention.head_count_kv", static_cast<uint32_t>(c.n_kv_heads));
  w.set_u32(a + "attention.key_length", static_cast<uint32_t>(c.head_dim));
  w.set_u32(a + "attention.value_length", static_cast<uint32_t>(c.head_dim));
  w.set_u32(a + "rope.dimension_count", static_cast<uint32_t>(c.head_dim));
  w.set_f32(a + "rope.freq_base", c.rope_theta);
  w.set_f32(a + "attention.layer_norm_rms_epsilon", c.norm_eps);
  w.set_u32(a + "vocab_size", static_cast<uint32_t>(c.vocab_size));
  // Llama 3 scaling has no keys: it travels as the rope_freqs.weight tensor (gguf_rope_freqs).
  if (c.rope_scaling.type != "none" && c.rope_scaling.type != "llama3") {
    if (c.rope_scaling.type != "linear")
      throw Error(where, "rope scaling '" + c.rope_scaling.type + "' has no GGUF keys in this writer");
    w.set_str(a + "rope.scaling.type", "linear");
    w.set_f32(a + "rope.scaling.factor", c.rope_scaling.factor);
  }
  if (v.pieces.empty()) return;
  w.set_str("tokenizer.ggml.model", v.model.empty() ? "llama" : v.model);
  w.set_str_array("tokenizer.ggml.tokens", v.pieces);
  if (!v.scores.empty()) w.set_f32_array("tokenizer.ggml.scores", v.scores);
  if (!v.types.empty()) w.set_i32_array("tokenizer.ggml.token_type", v.types);
  if (v.bos_id >= 0) w.set_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(v.bos_id));
  if (v.eos_id >= 0) w.set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(v.eos_id));
  if (v.unk_id >= 0) w.set_u32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(v.unk_id));
  if (v.pad_id >= 0) w.set_u32("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(v.pad_id));
  if (v.eot_id >= 0) w.set_u32("tokenizer.ggml.eot_token_id", static_cast<uint32_t>(v.eot_id));
  if (v.eom_id >= 0) w.set_u32("tokenizer.ggml.eom_token_id", static_cast<uint32_t>(v.eom_id));
  if (!v.pre.empty()) w.set_str("tokenizer.ggml.pre", v.pre);
  if (!v.merges.empty()) w.set_str_array("tokenizer.ggml.merges", v.merges);
  w.set_bool("tokenizer.ggml.add_bos_token", v.add_bos);
  w.set_bool("tokenizer.ggml.add_eos_token", false);
  if (!v.chat_template.empty()) w.set_str("tokenizer.chat_template", v.chat_template);
}

std::vector<float> gguf_rope_freqs(const ModelConfig& c) {
  if (c.rope_scaling.type != "llama3") return {};
  // llama.cpp's converter writes the divisor of each pair's frequency: unscaled / scaled.
  ModelConfig plain = c;
  plain.rope_scaling = RopeScaling{};
  plain.rope_freq_factors.clear();
  const RopeParams base = RopeParams::from(plain), scaled = RopeParams::from(c);
  std::vector<float> f(base.inv_freq.size());
  for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(base.inv_freq[i] / scaled.inv_freq[i]);
  return f;
}

}  // namespace llmwb
