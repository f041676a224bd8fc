// The vLLM quick-start, in C++: four prompts, nucleus sampling, stories260K.
//   llmwb-example-generate [MODEL]
#include <cstdio>
#include <string>

#include "llmwb/llm.h"

int main(int argc, char** argv) {
  const std::string model = argc > 1 ? argv[1] : LLMWB_DEFAULT_MODEL;
  try {
    llmwb::EngineConfig config;
    config.model = model;
    config.max_model_len = 512;   // stories260K was trained on 512 positions
    llmwb::LLM llm(config);
    const std::vector<std::string> prompts = {
        "Hello, my name is",
        "The president of the United States is",
        "The capital of France is",
        "The future of AI is",
    };
    llmwb::SamplingParams params;
    params.temperature = 0.8f;
    params.top_p = 0.95f;
    params.max_tokens = 100;
    for (const auto& out : llm.generate(prompts, params)) {
      if (!out.error.empty()) {
        std::printf("Prompt: %s\nError: %s\n\n", out.prompt.c_str(), out.error.c_str());
        continue;
      }
      std::printf("Prompt: %s\nGenerated text: %s\n\n", out.prompt.c_str(), out.outputs[0].text.c_str());
    }
  } catch (const llmwb::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
