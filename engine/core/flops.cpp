// flops.cpp — see llmwb/flops.h.
#include "llmwb/flops.h"

namespace llmwb {

ForwardFlops forward_flops(const ModelInfo& m, int64_t cached, int64_t new_tokens, int64_t logit_rows) {
  ForwardFlops f;
  if (new_tokens <= 0 || m.n_layers <= 0) return f;
  const double dim = m.dim, hidden = m.hidden_dim, layers = m.n_layers;
  const double q_width = double(m.n_heads) * m.head_dim, kv_width = double(m.n_kv_heads) * m.head_dim;
  const double n = double(new_tokens);
  const double rows = double(logit_rows < 0 ? 0 : logit_rows < new_tokens ? logit_rows : new_tokens);
  // Multiply-adds per token and layer: k and v (dim x kv_width each) for every token in every
  // layer (the cache); q and o (dim x q_width each), gate, up and down (dim x hidden each) for
  // every token but in the last layer, where only the logit rows go on (llama_model.cpp).
  const double kv_macs = 2 * dim * kv_width;
  const double rest_macs = 2 * dim * q_width + 3 * dim * hidden;
  f.linear = 2 * (kv_macs * layers * n + rest_macs * ((layers - 1) * n + rows));
  // Token i (0-based among the new ones) attends to cached + i + 1 positions; summed over i
  // (in the last layer over the logit rows, the last `rows` tokens, only).
  const auto positions = [&](double from) {   // tokens from .. n - 1
    return (n - from) * double(cached) + (n * (n + 1) - from * (from + 1)) / 2;
  };
  f.attention = 2 * 2 * q_width * (positions(0) * (layers - 1) + positions(n - rows));
  f.head = 2 * dim * double(m.vocab_size) * rows;
  return f;
}

uint64_t decode_weight_bytes(const ModelInfo& m) {
  if (m.tensors.empty()) return m.weight_bytes;
  uint64_t bytes = 0;
  for (const TensorInfo& t : m.tensors) {
    const bool embedding = t.name == "token_embd.weight";
    if (!embedding || m.tied_embeddings || t.shape.empty() || t.shape[0] <= 0) bytes += t.nbytes;
    else bytes += t.nbytes / static_cast<uint64_t>(t.shape[0]);   // one row
  }
  return bytes;
}

}  // namespace llmwb
