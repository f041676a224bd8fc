// model_config.cpp — consistency checks of a Llama-family configuration, run by every
// loader so that a bad file fails at load time with a named field, not inside a kernel.
#include "format/model_config.h"

#include <cmath>
#include <cstdio>

#include "llmwb/errors.h"

namespace llmwb {

namespace {

void require_positive(const std::string& where, const char* field, int v) {
  if (v <= 0) throw Error(where, std::string(field) + " is " + std::to_string(v) + ", must be positive");
}

std::string fmt(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
  return buf;
}

}  // namespace

const Architecture* find_architecture(const std::string& name) {
  static const Architecture kArchitectures[] = {
      {"llama", false, false, RopeLayout::Interleaved},
      {"mistral", false, false, RopeLayout::Interleaved},
      // llama.cpp runs Qwen with its NEOX RoPE (rotate-half) and stores q/k unpermuted.
      {"qwen2", true, false, RopeLayout::RotateHalf},
      {"qwen3", false, true, RopeLayout::RotateHalf},
  };
  for (const Architecture& a : kArchitectures)
    if (name == a.name) return &a;
  return nullptr;
}

std::string supported_architectures() { return "llama, mistral, qwen2, qwen3"; }

void ModelConfig::validate(const std::string& where) const {
  if (!find_architecture(architecture))
    throw Error(where, "architecture '" + architecture + "' is not supported (" + supported_architectures() + ")");
  require_positive(where, "dim", dim);
  require_positive(where, "hidden_dim", hidden_dim);
  require_positive(where, "n_layers", n_layers);
  require_positive(where, "n_heads", n_heads);
  require_positive(where, "n_kv_heads", n_kv_heads);
  require_positive(where, "head_dim", head_dim);
  require_positive(where, "vocab_size", vocab_size);
  require_positive(where, "max_seq_len", max_seq_len);
  // Grouped-query attention shares each K/V head among n_heads / n_kv_heads query heads
  // (Ainslie et al. 2023, GQA), so the division must be exact.
  if (n_kv_heads > n_heads || n_heads % n_kv_heads != 0) {
    throw Error(where, "n_kv_heads (" + std::to_string(n_kv_heads) + ") must divide n_heads (" +
                           std::to_string(n_heads) + ")");
  }
  // RoPE rotates dimensions in pairs (Su et al. 2021, RoFormer section 3.2.2).
  if (head_dim % 2 != 0) {
    throw Error(where, "head_dim (" + std::to_string(head_dim) + ") must be even for RoPE");
  }
  if (!(norm_eps > 0.0f) || !std::isfinite(norm_eps)) {
    throw Error(where, "norm_eps is " + fmt(norm_eps) + ", must be a positive number");
  }
  if (!(rope_theta > 0.0f) || !std::isfinite(rope_theta)) {
    throw Error(where, "rope_theta is " + fmt(rope_theta) + ", must be a positive number");
  }
  if (rope_scaling.type != "none" && rope_scaling.type != "linear" && rope_scaling.type != "llama3") {
    throw Error(where, "rope scaling type '" + rope_scaling.type +
                           "' is not supported (none, linear, llama3)");
  }
  if (rope_scaling.type != "none" && (!(rope_scaling.factor > 0.0f) || !std::isfinite(rope_scaling.factor))) {
    throw Error(where, "rope scaling factor is " + fmt(rope_scaling.factor) + ", must be positive");
  }
  if (rope_scaling.type == "llama3" && rope_scaling.original_max_position <= 0) {
    throw Error(where, "rope scaling original_max_position is " +
                           std::to_string(rope_scaling.original_max_position) + ", must be positive");
  }
  if (bos_id < -1 || bos_id >= vocab_size) {
    throw Error(where, "bos_id " + std::to_string(bos_id) + " is outside the vocabulary (" +
                           std::to_string(vocab_size) + " tokens)");
  }
  if (eos_id < -1 || eos_id >= vocab_size) {
    throw Error(where, "eos_id " + std::to_string(eos_id) + " is outside the vocabulary (" +
                           std::to_string(vocab_size) + " tokens)");
  }
}

}  // namespace llmwb
