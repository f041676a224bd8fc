// flops.h — the floating-point work of a forward pass, counted from the model's shape.
//
// Benchmarks state speed against the machine's peak FMA rate, so they need the FLOPs a
// forward pass really performs, not the "2 x parameters per token" rule of thumb: the token
// embedding is a lookup (no FLOPs), a prefill computes the output head and the last layer
// past its K/V only for the last token of each sequence (this engine's CPU forward pass; the
// CUDA one still runs that layer for every token, uncounted), and attention adds work that
// grows with the context. For tinyllama-1.1b at 512 prompt tokens the rule of thumb says 2.20
// GFLOP per token, the real count 1.90: a figure computed with the rule would read 16 % too
// high.
//
// Counted: every matmul (2 FLOPs per multiply-add: q, k, v, o, gate, up, down per layer;
// the output head per logit row) and attention's two products (scores q.k and the weighted
// sum of v, 2 x 2 x head_dim FLOPs per head and attended position). The last layer computes
// K and V for every token but q, attention, o and the FFN only for the logit rows. Not counted: norms,
// RoPE, softmax, SwiGLU's activation, residual adds (O(dim) per token, < 0.1 %).
#pragma once

#include <cstdint>

#include "llmwb/model_info.h"

namespace llmwb {

struct ForwardFlops {
  double linear = 0;      // the layers' matmuls
  double attention = 0;   // q.k scores and the weighted sum of v
  double head = 0;        // the output head
  double total() const { return linear + attention + head; }
};

// One sequence's forward pass over `new_tokens` tokens appended after `cached` tokens
// already in its KV cache (token i attends to cached + i + 1 positions), computing logits
// for the last `logit_rows` of them.
// Prefill of a P-token prompt: (0, P, 1). One decode step at context c: (c, 1, 1).
ForwardFlops forward_flops(const ModelInfo& m, int64_t cached, int64_t new_tokens, int64_t logit_rows = 1);

// Bytes of weights one decode step reads: every tensor but the token embedding, of which one
// row is looked up (a head tied to the embedding reads all of it, as the head). The
// bandwidth-bound limit of generation is bandwidth / this. Without a tensor list (m.tensors
// empty): m.weight_bytes.
uint64_t decode_weight_bytes(const ModelInfo& m);

}  // namespace llmwb
