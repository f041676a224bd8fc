// quant_scheme.h — a named weight quantization scheme ("int8", "int4-g32", "q4_0", ...) and
// the rule that picks each matrix's element type under it.
//
// Like llama.cpp's quantizer, a scheme is more than one type: matrices whose rows a GGUF block
// type cannot hold (stories260K's ffn_down has 172 columns) fall back to another type, and the
// output head of the 4-bit schemes is kept at 8 bits because its error reaches every logit
// directly (llama.cpp keeps output.weight in Q6_K for Q4_0 for the same reason).
#pragma once

#include <string>
#include <vector>

#include "model/tensor.h"

namespace llmwb {

struct QuantScheme {
  std::string name;   // as given: "int8", "int8-asym", "int4-g32", "int4-g128", "q8_0", "q4_0"
  DType matrix;       // the type of the layers' matrices
  DType fallback;     // for rows `matrix` cannot hold; keep_source_on_misfit: left as stored
  bool keep_source_on_misfit;
  DType output;       // the untied output head (same fallback rule)

  // Throws llmwb::Error("quantize", "unknown scheme 'X'; one of: ...").
  static QuantScheme parse(const std::string& name);
  static const std::vector<std::string>& names();

  // The type `t` should become; t.dtype itself means "leave the tensor as it is".
  DType dtype_for(const TensorView& t, bool is_output_head) const;
};

}  // namespace llmwb
