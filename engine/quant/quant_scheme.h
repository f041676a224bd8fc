// quant_scheme.h — a named weight quantization scheme ("int8", "int4-g32", "q4_0", "q4_k_m",
// ...) and the rule that picks each matrix's element type under it.
//
// Like llama.cpp's quantizer, a scheme is more than one type: matrices whose rows a GGUF block
// type cannot hold (stories260K's ffn_down has 172 columns, its rows of 64 are not k-quant
// super-blocks of 256) fall back to another type, the output head is kept at more bits because
// its error reaches every logit directly (llama.cpp keeps output.weight in Q6_K), and the
// k-quant mix q4_k_m gives some layers' attn_v / ffn_down Q6_K (llama.cpp's use_more_bits).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "format/tensor.h"

namespace llmwb {

// Where a tensor sits in the model, for the rules that depend on it.
struct TensorRole {
  bool is_output_head = false;   // the untied output.weight, or a tied embedding
  bool is_embedding = false;     // token_embd.weight
  int layer = -1;                // blk.N: N; -1 outside the layers
  int n_layers = 0;
};

// The type a scheme picks for one tensor, and the type it wanted when that does not fit.
struct QuantChoice {
  DType dtype;    // t.dtype itself means "leave the tensor as it is"
  DType wanted;   // != dtype: a fallback because the rows do not fit `wanted`
};

struct QuantScheme {
  std::string name;   // as given, one of names()
  DType matrix;       // the type of the layers' matrices
  DType fallback;     // for rows `matrix` cannot hold; keep_source_on_misfit: left as stored
  bool keep_source_on_misfit;
  DType output;       // the untied output head (same fallback rule)
  // Token embedding: quantized to this type (the head's type when tied) or, unset, kept.
  std::optional<DType> embedding;
  bool more_bits_mix = false;   // q4_k_m: Q6_K for attn_v / ffn_down where use_more_bits()

  // Throws llmwb::Error("quantize", "unknown scheme 'X'; one of: ...").
  static QuantScheme parse(const std::string& name);
  static const std::vector<std::string>& names();

  // The scheme as it should run on `backend` ("cpu", "cuda"): the CUDA backend has no k-quant
  // kernel and would widen a Q6_K head to F16 on the device (twice Q8_0's bytes, read every
  // decode step), so for "cuda" a k-quant head becomes Q8_0, which it multiplies natively.
  // Matrices are left alone (a k-quant scheme's matrices still go to the device as F16).
  QuantScheme for_backend(const std::string& backend) const;

  QuantChoice choose(const TensorView& t, const TensorRole& role) const;
  DType dtype_for(const TensorView& t, const TensorRole& role) const { return choose(t, role).dtype; }
};

// llama.cpp's rule for the layers that get more bits in the _M k-quant mixes: the first and
// last eighth of the layers, and every third layer in between.
bool use_more_bits(int layer, int n_layers);

}  // namespace llmwb
