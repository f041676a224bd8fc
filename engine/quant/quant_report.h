// quant_report.h — everything `llmwb-cli quant-report` prints: what a quantization scheme does
// to one model's tensors, layers, perplexity, next-token distributions and greedy output.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "quant/model_comparison.h"
#include "quant/tensor_error.h"

namespace llmwb {

struct QuantReportOptions {
  std::string model_path;
  std::string tokenizer_path;   // empty: the model's own (load_tokenizer_for)
  std::string scheme;           // QuantScheme::names()
  std::string text;             // evaluation text (perplexity, KL, top-1 agreement)
  std::string text_name;        // where the text came from, for the report
  int threads = 2;
  int window = 0;               // perplexity window in positions; 0: the model's context
  int max_text_tokens = 0;      // score at most this many tokens of the text; 0: all
  int calib_tokens = 64;        // layer errors: BOS + this many tokens of the text
  int greedy_tokens = 64;       // greedy generation from BOS, compared token by token
};

struct QuantReport {
  std::string model, scheme, text_name;
  uint64_t weight_bytes_before = 0, weight_bytes_after = 0;   // every tensor of the model
  std::vector<TensorError> tensors;    // the tensors the scheme changed, in file order
  std::vector<OutputError> outputs;    // layer outputs, then matmul outputs
  TextScore text;
  GreedyAgreement greedy;
};

// Loads the model twice (once as stored, once quantized with quantize_weights_in_place) and
// measures. Throws llmwb::Error for a bad model, tokenizer, scheme or an empty text.
QuantReport make_quant_report(const QuantReportOptions& o);

}  // namespace llmwb
