// llmwb/llm.h — the offline entry point users know from vLLM:
//
//   llmwb::LLM llm("stories260K.gguf");
//   llmwb::SamplingParams params;
//   params.temperature = 0.8f, params.top_p = 0.95f, params.max_tokens = 100;
//   for (auto& out : llm.generate({"Hello, my name is"}, params))
//     std::cout << out.prompt << out.outputs[0].text << "\n";
//
//   for (auto& out : llm.chat({{{"system", "Be brief."}, {"user", "Hi!"}}}, params))
//     std::cout << out.outputs[0].text << "\n";
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "llmwb/chat_template.h"
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

  // Runs each conversation through the model's chat template (llmwb/chat_prompt.h, as the
  // Chat view and `generate --chat` do): control tokens only from the template, the format's
  // end-of-turn strings added to the stop strings. One RequestOutput per conversation, whose
  // prompt is the rendered text. Throws llmwb::Error where the template cannot render one
  // (an unknown role, turns that do not alternate where the template requires it).
  std::vector<RequestOutput> chat(const std::vector<std::vector<ChatMessage>>& conversations,
                                  const SamplingParams& params = {}, const ChatOptions& options = {});
  // The chat format in use: the model's own unless set_chat_template chose another.
  const ChatTemplate& chat_template() const { return chat_template_; }
  void set_chat_template(const ChatTemplate& t) { chat_template_ = t; }

  Engine& engine() { return *engine_; }

 private:
  // Steps the engine until every request in `slot` (request id -> index) has finished.
  void run(std::map<uint64_t, size_t>& slot, std::vector<RequestOutput>& results);

  std::unique_ptr<Engine> engine_;
  ChatTemplate chat_template_;
};

}  // namespace llmwb
