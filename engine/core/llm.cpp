#include "llmwb/llm.h"

#include <map>

#include "llmwb/chat_prompt.h"

namespace llmwb {

LLM::LLM(const EngineConfig& config)
    : engine_(std::make_unique<Engine>(config)), chat_template_(model_chat_template(*engine_)) {}

LLM::LLM(const std::string& model, const std::string& tokenizer, int tensor_parallel_size) {
  EngineConfig c;
  c.model = model;
  c.tokenizer = tokenizer;
  c.tensor_parallel_size = tensor_parallel_size;
  engine_ = std::make_unique<Engine>(c);
  chat_template_ = model_chat_template(*engine_);
}

std::vector<RequestOutput> LLM::generate(const std::vector<std::string>& prompts, const SamplingParams& params) {
  return generate(prompts, std::vector<SamplingParams>(prompts.size(), params));
}

std::vector<RequestOutput> LLM::generate(const std::vector<std::string>& prompts,
                                         const std::vector<SamplingParams>& params) {
  if (params.size() != prompts.size())
    throw Error("generate", std::to_string(prompts.size()) + " prompts but " + std::to_string(params.size()) +
                                " sampling parameter sets");
  std::vector<RequestOutput> results(prompts.size());
  std::map<uint64_t, size_t> slot;
  for (size_t i = 0; i < prompts.size(); ++i) {
    results[i].prompt = prompts[i];
    try {
      slot[engine_->add_request(prompts[i], params[i])] = i;
    } catch (const Error& e) {
      results[i].error = e.what();
      results[i].finished = true;
    }
  }
  run(slot, results);
  return results;
}

std::vector<RequestOutput> LLM::chat(const std::vector<std::vector<ChatMessage>>& conversations,
                                     const SamplingParams& params, const ChatOptions& options) {
  std::vector<RenderedChat> rendered;
  for (const auto& messages : conversations) rendered.push_back(render_chat(chat_template_, messages, options));
  std::vector<RequestOutput> results(conversations.size());
  std::map<uint64_t, size_t> slot;
  for (size_t i = 0; i < rendered.size(); ++i) {
    results[i].prompt = rendered[i].text();
    try {
      slot[add_chat_request(*engine_, rendered[i], chat_template_.format, params)] = i;
    } catch (const Error& e) {
      results[i].error = e.what();
      results[i].finished = true;
    }
  }
  run(slot, results);
  return results;
}

void LLM::run(std::map<uint64_t, size_t>& slot, std::vector<RequestOutput>& results) {
  size_t left = slot.size();
  while (left > 0 && engine_->has_unfinished()) {
    for (RequestOutput& o : engine_->step()) {
      if (!o.finished) continue;
      auto it = slot.find(o.request_id);
      if (it == slot.end()) continue;
      for (auto& c : o.outputs) c.delta.clear();
      results[it->second] = std::move(o);
      --left;
    }
  }
}

}  // namespace llmwb
