#include "format/gguf_llama_metadata.h"

#include "llmwb/errors.h"

namespace llmwb {

void set_llama_gguf_metadata(GgufWriter& w, const ModelConfig& c, const TokenizerData& v, const std::string& where) {
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
    if (c.rope_scaling.type != "linear")
      throw Error(where, "rope scaling '" + c.rope_scaling.type + "' has no GGUF keys in this writer");
    w.set_str("llama.rope.scaling.type", "linear");
    w.set_f32("llama.rope.scaling.factor", c.rope_scaling.factor);
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

}  // namespace llmwb
