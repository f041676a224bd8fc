// weight_quantizer.h — quantizes a loaded model's matrices in memory (load-time --quantize)
// and single tensors (llmwb-cli quantize, the error report).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/llama_weights.h"
#include "format/model_file.h"
#include "quant/quant_scheme.h"

namespace llmwb {

// Re-encodes every row of `src` (any dtype) as `dtype` into `out` (resized to fit) and returns a
// view of `src`'s name and shape over `out`. Rows run on up to `n_threads` threads.
TensorView quantize_tensor(const TensorView& src, DType dtype, std::vector<uint8_t>& out, int n_threads = 4);
// The same into a PageBuffer (replaced by one of the right size).
TensorView quantize_tensor(const TensorView& src, DType dtype, PageBuffer& out, int n_threads = 4);

// What quantize_weights_in_place did to one tensor.
struct QuantizedTensor {
  std::string name;
  DType from, to;
  DType wanted;   // the scheme's type; != to when the rows did not fit it (a fallback)
};

// Quantizes the matrices of `w` (wq wk wv wo w1 w2 w3 of every layer, and the output head when it
// is not tied to the embedding; the token embedding too under the k-quant schemes, at the
// head's type when tied) under `scheme` (QuantScheme::names()). The new data lives in buffers
// appended to file.quantized (a backend may discard them once copied: ModelFile::discard_quantized); the TensorViews of `w` and the entries of file.tensors with the same
// names are repointed to it. Norm vectors stay as they are. Tensors already of the target type
// are left alone. Returns one entry per tensor considered, in model order. Throws llmwb::Error
// for an unknown scheme. `backend` is where the weights will run (QuantScheme::for_backend).
std::vector<QuantizedTensor> quantize_weights_in_place(ModelFile& file, LlamaWeights& w, const std::string& scheme,
                                                       const std::string& backend = "cpu");

}  // namespace llmwb
