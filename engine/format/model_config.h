// model_config.h — the hyper-parameters of a Llama-family transformer.
#pragma once

#include <string>
#include <vector>

namespace llmwb {

// How RoPE pairs dimensions within a head.
//  Interleaved: (x[2i], x[2i+1]) rotate together — GGUF (llama.cpp permutes q/k on conversion)
//               and llama2.c checkpoints.
//  RotateHalf:  (x[i], x[i + d/2]) rotate together — Hugging Face checkpoints ("rotate_half").
// Keeping the checkpoint's layout and rotating accordingly avoids rewriting (and copying)
// the memory-mapped q/k weights.
enum class RopeLayout { Interleaved, RotateHalf };

struct RopeScaling {
  std::string type = "none";   // "none", "linear", "llama3"
  float factor = 1.0f;
  float low_freq_factor = 1.0f;    // llama3
  float high_freq_factor = 4.0f;   // llama3
  int original_max_position = 8192;  // llama3
};

// The architectures the forward pass runs, by their GGUF general.architecture name, and the
// variants each one sets (every variant is a ModelConfig field, so a file may also set them
// alone):
//   llama, mistral  the Llama graph (Llama 2, Llama 3.x, Mistral); GGUF q/k rows interleaved
//   qwen2           + Q/K/V projection biases (Qwen2, Qwen2.5); GGUF q/k rows rotate-half
//   qwen3           + per-head RMSNorm of Q and K before RoPE, head_dim set explicitly (Qwen3)
struct Architecture {
  const char* name;
  bool qkv_bias;
  bool qk_norm;
  RopeLayout gguf_rope_layout;   // how llama.cpp's converter stores q/k rows for this arch
};
// nullptr for an architecture llmwb does not run.
const Architecture* find_architecture(const std::string& name);
// "llama, mistral, qwen2, qwen3": for the error that names an unsupported one.
std::string supported_architectures();

struct ModelConfig {
  std::string architecture = "llama";   // one of supported_architectures()
  std::string name;
  int dim = 0;           // embedding width
  int hidden_dim = 0;    // feed-forward width
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;    // < n_heads: grouped-query; 1: multi-query
  int head_dim = 0;      // per head of Q, K and V; dim / n_heads unless the file says (Qwen3: 128 at dim 1024, 16 heads)
  int vocab_size = 0;
  int max_seq_len = 0;   // context length
  float norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  RopeLayout rope_layout = RopeLayout::Interleaved;
  RopeScaling rope_scaling;
  // Per-pair divisors of the RoPE frequencies (GGUF rope_freqs.weight, Llama 3.1); empty = none.
  std::vector<float> rope_freq_factors;
  bool tied_embeddings = false;   // output head = token embedding
  // Q, K and V projections add a bias (blk.N.attn_q.bias / attn_k.bias / attn_v.bias): Qwen2.
  bool attn_qkv_bias = false;
  // Each head of Q and of K is RMS-normalized (gains blk.N.attn_q_norm.weight /
  // attn_k_norm.weight, head_dim each, epsilon norm_eps) after the bias and before RoPE: Qwen3.
  bool attn_qk_norm = false;
  int bos_id = 1;
  int eos_id = 2;

  // Throws llmwb::Error(where, ...) naming the first inconsistent field.
  void validate(const std::string& where) const;
};

}  // namespace llmwb
