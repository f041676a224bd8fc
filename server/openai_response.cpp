#include "openai_response.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>

namespace llmwb::server {

using nlohmann::json;

namespace {

std::string new_id(const char* prefix) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  char b[64];
  std::snprintf(b, sizeof b, "%s-%016llx%08llx", prefix, (unsigned long long)salt,
                (unsigned long long)counter.fetch_add(1));
  return b;
}

const char* finish_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::None: return "";
    default: return "abort";
  }
}

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(int(c));
  return b;
}

}  // namespace

OpenAIResponse::OpenAIResponse(const OpenAIRequest& request, std::string model)
    : req_(request),
      model_(std::move(model)),
      id_(new_id(request.chat ? "chatcmpl" : "cmpl")),
      created_(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count()),
      choices_(request.num_prompts() * static_cast<size_t>(request.params.n)),
      prompt_tokens_(request.num_prompts(), 0),
      prompt_done_(request.num_prompts(), 0) {}

std::string OpenAIResponse::dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

bool OpenAIResponse::finished() const {
  for (char d : prompt_done_)
    if (!d) return false;
  return true;
}

json OpenAIResponse::usage() const {
  size_t prompt = 0, completion = 0;
  for (size_t p : prompt_tokens_) prompt += p;
  for (const Choice& c : choices_) completion += c.completion_tokens;
  return {{"prompt_tokens", prompt}, {"completion_tokens", completion}, {"total_tokens", prompt + completion}};
}

json OpenAIResponse::chunk(json choices, bool with_usage_null) const {
  json j = {{"id", id_}, {"object", req_.chat ? "chat.completion.chunk" : "text_completion"}, {"created", created_},
            {"model", model_}, {"choices", std::move(choices)}};
  if (with_usage_null) j["usage"] = nullptr;
  return j;
}

json OpenAIResponse::logprobs_json(const CompletionOutput& c, size_t from, const ChannelEvent& ev, size_t text_offset) const {
  auto text = [&](int id) {
    auto it = ev.token_text.find(id);
    return it == ev.token_text.end() ? std::string() : it->second;
  };
  const size_t to = c.token_logprobs.size();
  if (req_.chat) {
    json content = json::array();
    for (size_t i = from; i < to; ++i) {
      const std::string t = text(c.token_ids[i]);
      json top = json::array();
      for (const TokenLogprob& tl : c.top_logprobs[i]) {
        const std::string tt = text(tl.token);
        top.push_back({{"token", tt}, {"logprob", tl.logprob}, {"bytes", bytes_of(tt)}});
      }
      content.push_back({{"token", t}, {"logprob", c.token_logprobs[i]}, {"bytes", bytes_of(t)}, {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  json tokens = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
  for (size_t i = from; i < to; ++i) {
    const std::string t = text(c.token_ids[i]);
    tokens.push_back(t);
    lps.push_back(c.token_logprobs[i]);
    json top = json::object();
    for (const TokenLogprob& tl : c.top_logprobs[i]) top[text(tl.token)] = tl.logprob;
    tops.push_back(top);
    offsets.push_back(text_offset);
    text_offset += t.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

std::string OpenAIResponse::absorb(const ChannelEvent& ev) {
  if (ev.kind != ChannelEvent::Kind::Output) return {};
  const RequestOutput& o = ev.output;
  const size_t p = static_cast<size_t>(ev.prompt_index);
  if (p >= prompt_tokens_.size()) return {};
  prompt_tokens_[p] = o.prompt_token_ids.size();
  json out_choices = json::array();
  for (const CompletionOutput& c : o.outputs) {
    const size_t index = p * static_cast<size_t>(req_.params.n) + static_cast<size_t>(c.index);
    if (index >= choices_.size()) continue;
    Choice& ch = choices_[index];
    if (!ch.finish_reason.empty()) continue;
    const size_t offset = ch.text.size();
    ch.text += c.delta;
    ch.completion_tokens = c.token_ids.size();
    json lp = nullptr;
    if (req_.logprobs && c.token_logprobs.size() > ch.logprobs_sent) {
      lp = logprobs_json(c, ch.logprobs_sent, ev, offset);
      ch.logprobs_sent = c.token_logprobs.size();
      if (ch.logprobs.is_null()) {
        ch.logprobs = lp;
      } else {
        for (auto& [k, v] : lp.items())
          for (auto& x : v) ch.logprobs[k].push_back(x);
      }
    }
    if (c.finish_reason != FinishReason::None) ch.finish_reason = finish_name(c.finish_reason);
    if (!req_.stream || (c.delta.empty() && lp.is_null() && ch.finish_reason.empty() && ch.role_sent)) continue;
    json finish = ch.finish_reason.empty() ? json(nullptr) : json(ch.finish_reason);
    if (req_.chat) {
      json delta = json::object();
      if (!ch.role_sent) delta["role"] = "assistant";
      ch.role_sent = true;
      if (!c.delta.empty() || delta.contains("role")) delta["content"] = c.delta;
      out_choices.push_back({{"index", index}, {"delta", delta}, {"logprobs", lp}, {"finish_reason", finish}});
    } else {
      out_choices.push_back({{"index", index}, {"text", c.delta}, {"logprobs", lp}, {"finish_reason", finish}});
    }
  }
  if (o.finished) prompt_done_[p] = 1;
  if (out_choices.empty()) return {};
  return "data: " + dump(chunk(std::move(out_choices), req_.include_usage)) + "\n\n";
}

std::string OpenAIResponse::stream_end() const {
  std::string s;
  if (req_.include_usage) {
    json j = chunk(json::array(), false);
    j["usage"] = usage();
    s += "data: " + dump(j) + "\n\n";
  }
  return s + "data: [DONE]\n\n";
}

json OpenAIResponse::body() const {
  json choices = json::array();
  for (size_t i = 0; i < choices_.size(); ++i) {
    const Choice& c = choices_[i];
    const json finish = c.finish_reason.empty() ? json(nullptr) : json(c.finish_reason);
    if (req_.chat)
      choices.push_back({{"index", i}, {"message", {{"role", "assistant"}, {"content", c.text}}},
                         {"logprobs", req_.logprobs ? c.logprobs : json(nullptr)}, {"finish_reason", finish}});
    else
      choices.push_back({{"index", i}, {"text", c.text}, {"logprobs", req_.logprobs ? c.logprobs : json(nullptr)},
                         {"finish_reason", finish}});
  }
  return {{"id", id_}, {"object", req_.chat ? "chat.completion" : "text_completion"}, {"created", created_},
          {"model", model_}, {"choices", choices}, {"usage", usage()}};
}

}  // namespace llmwb::server
