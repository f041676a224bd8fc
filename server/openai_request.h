// openai_request.h — a POST body of /v1/completions or /v1/chat/completions, checked field by
// field: every field must be one the server supports (anything else is a 400 naming it, never
// ignored), of the right JSON type and in range. Null means "not given", as in OpenAI's API.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "llmwb/chat_template.h"
#include "llmwb/sampling_params.h"

namespace llmwb::server {

struct OpenAIRequest {
  bool chat = false;
  std::string model;                          // empty: not given
  // /v1/completions: one or more prompts, each text or token ids.
  std::vector<std::string> prompts;
  std::vector<std::vector<int>> prompt_ids;   // used where non-empty instead of `prompts`
  // /v1/chat/completions.
  std::vector<ChatMessage> messages;
  SamplingParams params;
  bool stream = false;
  bool include_usage = false;                 // stream_options.include_usage
  // Log probabilities asked for: chat's logprobs/top_logprobs, completions' integer logprobs.
  bool logprobs = false;
  int top_logprobs = 0;
  size_t num_prompts() const { return prompt_ids.empty() ? (chat ? 1 : prompts.size()) : prompt_ids.size(); }
};

// Throws ApiError (400) naming the field. max_tokens defaults to 16 for completions (OpenAI's
// default) and to `context_length` for chat (the rest of the context).
OpenAIRequest parse_openai_request(const nlohmann::json& body, bool chat, int context_length);

}  // namespace llmwb::server
