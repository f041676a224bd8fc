// llmwb/llm.h — the offline entry point users know from vLLM:
//
//   llmwb::LLM llm("stories260K.gguf");
//   llmwb::SamplingParams params;
//   params.temperature = 0.8f, params.top_p = 0.95f, params.max_tokens = 100;
//   for (auto& out : llm.generate({"Hello, my name is"}, params))
//     std::cout << out.prompt << out.outputs[0].text << "\n";
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "llmwb/engine.h"
#include "llmwb/engine_config.h"
#include "llmwb/errors.h"
#include "llmwb/outputs.h"
#include "llmwb/sampling_params.h"

namespace llmwb {

class LLM {
 public:
  explicit LLM(const EngineConfig& config);
  LLM(const std::string& model, const std::string& tokenizer = {}, int tensor_parallel_size = 1);

  // Runs every prompt to completion through the continuous-batching engine and returns one
  // RequestOutput per prompt, in prompt order. Requests that fail carry .error.
  std::vector<RequestOutput> generate(const std::vector<std::string>& prompts,
                                      const SamplingParams& params = {});
  // Same, one SamplingParams per prompt.
  std::vector<RequestOutput> generate(const std::vector<std::string>& prompts,
                                      const std::vector<SamplingParams>& params);

  Engine& engine() { return *engine_; }

 private:
  std::unique_ptr<Engine> engine_;
};

}  // namespace llmwb
