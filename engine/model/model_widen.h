// model_widen.h — a trained model made f times wider, computing the same function
// (`llmwb-cli make-model --from MODEL --widen F`).
//
// Speculative decoding pays only where the target's decode step is bound by reading its
// weights, and it needs a target whose next token a cheap proposer can guess: a trained model.
// The only trained model on hand (stories260K) is too small to be memory-bound, and a
// random-weight model at a real size produces near-uniform logits that nothing predicts. A
// function-preserving widening (Net2Net's "wider" transformation, Chen et al. 2016) gives
// both: every width (residual stream, heads, KV heads, feed-forward units) is replicated f
// times and every weight that reads a replicated input is divided by f, so the wide model's
// logits equal the source's (up to float rounding) while each token reads f^2 times the
// matrix bytes. Heads keep their head_dim; GQA groups map onto the copies unchanged;
// RMSNorm of f copies of x is f copies of RMSNorm(x).
//
// Per tensor {rows, cols} (row-major {out, in}):
//   token_embd          cols replicated (each embedding row is f copies of the source row)
//   output (the head)   cols replicated, divided by f (a tied head is written out untied)
//   q, k, v, o, gate, up, down
//                       rows and cols replicated, divided by f
//   norm gains, Q/K/V biases  replicated; per-head Q/K norm gains and rope_freqs unchanged
// `noise` > 0 adds normal(0, noise x the tensor's RMS) to every widened matrix element (Net2Net
// breaks the copies' symmetry the same way): the wide model then differs slightly from its
// source, as a larger model differs from its draft.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "format/model_file.h"

namespace llmwb {

struct WidenOptions {
  int factor = 2;            // >= 1
  DType dtype = DType::F32;  // of the widened matrices: F32, F16 or BF16 (norm vectors stay F32)
  float noise = 0.0f;        // relative to each tensor's RMS; 0: the exact function
  uint64_t seed = 0;         // of the noise
};

// The widened model as a ModelFile owning its tensors (write it with write_model_gguf). Any
// weight type of `src` is read (dequantized). Throws llmwb::Error naming the option ("widen",
// "noise", "dtype") or the source file and tensor.
std::unique_ptr<ModelFile> widen_model(const ModelFile& src, const WidenOptions& opt);

}  // namespace llmwb
