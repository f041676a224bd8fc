// model_comparison.h — runs a reference model (as stored, usually F32) and its quantized copy
// side by side and measures what quantization changed: perplexity on a text, KL divergence of
// the next-token distributions, greedy agreement, and the error of every layer's output.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "llmwb/quant_report.h"   // TextScore, GreedyAgreement, OutputError
#include "model/llama_weights.h"
#include "format/model_config.h"

namespace llmwb {

class Backend;

class ModelComparison {
 public:
  ModelComparison(const ModelConfig& config, LlamaWeights ref, LlamaWeights quant, int n_threads);
  // The two models may differ in how they are laid out (a Hugging Face folder against the GGUF
  // written from it: RoPE layout), not in vocabulary, context or shape.
  ModelComparison(const ModelConfig& ref_config, LlamaWeights ref, const ModelConfig& quant_config, LlamaWeights quant,
                  int n_threads);
  ~ModelComparison();

  // Perplexity of `tokens` (a text without BOS) under both models. The text is cut into windows
  // of at most `window` positions (capped at the model's context); each starts with BOS and
  // every token of the window is scored, as llama2.c-style models were trained.
  // `progress` (optional) is told the share of the work done after each window / token; it may
  // throw to stop.
  TextScore score_text(const std::vector<int>& tokens, int window, const std::function<void(double)>& progress = {});
  // Each model continues `prompt` greedily for `n_new` tokens (fewer if the context ends).
  GreedyAgreement greedy(const std::vector<int>& prompt, int n_new, const std::function<void(double)>& progress = {});
  // One prefill of `tokens` through both models: the relative error of the residual stream
  // after each layer, then of every matmul output, in forward order. Each model runs on its own
  // activations, so a matmul's error includes what earlier layers passed on to its input.
  std::vector<OutputError> output_errors(const std::vector<int>& tokens);

 private:
  struct Runner;
  ModelConfig config_;
  std::unique_ptr<Backend> backend_;   // shared by both runners (one thread pool), outlives them
  std::unique_ptr<Runner> ref_, quant_;
};

}  // namespace llmwb
