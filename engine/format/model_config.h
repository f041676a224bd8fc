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

struct ModelConfig {
  std::string architecture = "llama";
  std::string name;
  int dim = 0;           // embedding width
  int hidden_dim = 0;    // feed-forward width
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;    // < n_heads: grouped-query; 1: multi-query
  int head_dim = 0;      // usually dim / n_heads
  int vocab_size = 0;
  int max_seq_len = 0;   // context length
  float norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  RopeLayout rope_layout = RopeLayout::Interleaved;
  RopeScaling rope_scaling;
  // Per-pair divisors of the RoPE frequencies (GGUF rope_freqs.weight, Llama 3.1); empty = none.
  std::vector<float> rope_freq_factors;
  bool tied_embeddings = false;   // output head = token embedding
  int bos_id = 1;
  int eos_id = 2;

  // Throws llmwb::Error(where, ...) naming the first inconsistent field.
  void validate(const std::string& where) const;
};

}  // namespace llmwb
