#include "llmwb/chat_prompt.h"

#include <algorithm>

namespace llmwb {

ChatTemplate model_chat_template(const Engine& engine) {
  return recognize_chat_template(engine.model_info().chat_template, engine.model_info().name);
}

std::vector<int> chat_prompt_ids(const Engine& engine, const RenderedChat& chat) {
  ChatTokenizer tok;
  tok.encode = [&engine](const std::string& text, bool parse_special) {
    return engine.encode(text, /*add_bos=*/false, parse_special);
  };
  // The BOS the engine puts before a text prompt; none where the vocabulary has no BOS id.
  tok.bos = engine.encode("", /*add_bos=*/true);
  std::erase_if(tok.bos, [](int id) { return id < 0; });
  return chat_token_ids(chat, tok);
}

uint64_t add_chat_request(Engine& engine, const RenderedChat& chat, ChatFormat format, SamplingParams params) {
  for (const std::string& s : chat_stop_strings(format))
    if (std::find(params.stop.begin(), params.stop.end(), s) == params.stop.end()) params.stop.push_back(s);
  return engine.add_request_tokens(chat_prompt_ids(engine, chat), params, chat.text());
}

}  // namespace llmwb
