// openai_response.h — a request's channel events turned into OpenAI's response shapes: one
// JSON object (text_completion / chat.completion) or server-sent-event chunks
// (text_completion / chat.completion.chunk) ending in `data: [DONE]`. Choice i of prompt p is
// index p * n + i, as OpenAI numbers them.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "openai_request.h"
#include "request_channel.h"

namespace llmwb::server {

class OpenAIResponse {
 public:
  OpenAIResponse(const OpenAIRequest& request, std::string model);

  // Takes one Output event; returns its SSE chunks (empty when nothing changed that a client sees).
  std::string absorb(const ChannelEvent& ev);
  bool finished() const;
  // Streaming: the usage chunk (stream_options.include_usage) and `data: [DONE]`.
  std::string stream_end() const;
  // Not streaming: the whole response.
  nlohmann::json body() const;

  // JSON text for a response: invalid UTF-8 (a token cut inside a character) becomes U+FFFD.
  static std::string dump(const nlohmann::json& j);

 private:
  struct Choice {
    std::string text;
    std::string finish_reason;   // empty while running
    size_t completion_tokens = 0;
    size_t logprobs_sent = 0;    // tokens whose log probabilities are in `logprobs` / were streamed
    bool role_sent = false;
    nlohmann::json logprobs = nullptr;   // accumulated, for the non-streaming body
  };
  nlohmann::json chunk(nlohmann::json choices, bool with_usage_null) const;
  nlohmann::json usage() const;
  // The log probabilities of tokens [from, to) of `c`, in the endpoint's format.
  nlohmann::json logprobs_json(const CompletionOutput& c, size_t from, const ChannelEvent& ev, size_t text_offset) const;

  const OpenAIRequest& req_;
  std::string model_, id_;
  int64_t created_;
  std::vector<Choice> choices_;
  std::vector<size_t> prompt_tokens_;
  std::vector<char> prompt_done_;
};

}  // namespace llmwb::server
