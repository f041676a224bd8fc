// rope_params.h — a model's RoPE frequencies, derived from its ModelConfig once: the backends
// rotate with them, and the GGUF writer stores Llama 3 scaling as their divisors (rope_freqs).
#pragma once

#include <vector>

#include "format/model_config.h"

namespace llmwb {

// Rotary position embedding (Su et al., RoFormer, 2021) with a model's theta, scaling and
// pair layout. inv_freq[i] = theta^(-2i/head_dim), adjusted by the rope scaling.
struct RopeParams {
  int head_dim = 0;
  RopeLayout layout = RopeLayout::Interleaved;
  std::vector<double> inv_freq;   // head_dim / 2
  static RopeParams from(const ModelConfig& c);
};

}  // namespace llmwb
