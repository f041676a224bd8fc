#include "openai_request.h"

#include <cmath>
#include <limits>
#include <set>

#include "api_error.h"

namespace llmwb::server {

namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& param, const std::string& what, const std::string& code = "invalid_value") {
  throw ApiError(400, "'" + param + "' " + what, param, code);
}

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_float: return "a number";
    default: return "an integer";
  }
}

[[noreturn]] void wrong_type(const std::string& param, const char* expected, const json& v) {
  bad(param, std::string("must be ") + expected + ", got " + type_name(v), "invalid_type");
}

double number(const json& v, const std::string& param, double lo, double hi) {
  if (!v.is_number()) wrong_type(param, "a number", v);
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < lo || x > hi) bad(param, "must be in [" + json(lo).dump() + ", " + json(hi).dump() + "], got " + v.dump());
  return x;
}

int64_t integer(const json& v, const std::string& param, int64_t lo, int64_t hi) {
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::floor(d) != d) wrong_type(param, "an integer", v);
  } else if (!v.is_number_integer()) {
    wrong_type(param, "an integer", v);
  }
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    bad(param, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + v.dump());
  const int64_t x = v.is_number_float() ? static_cast<int64_t>(v.get<double>()) : v.get<int64_t>();
  if (x < lo || x > hi) bad(param, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + v.dump());
  return x;
}

bool boolean(const json& v, const std::string& param) {
  if (!v.is_boolean()) wrong_type(param, "a boolean", v);
  return v.get<bool>();
}

std::string string(const json& v, const std::string& param) {
  if (!v.is_string()) wrong_type(param, "a string", v);
  return v.get<std::string>();
}

// A message's content: a string, or an array of {"type": "text", "text": ...} parts.
std::string content(const json& v, const std::string& param) {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array()) wrong_type(param, "a string or an array of text parts", v);
  std::string text;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string p = param + "[" + std::to_string(i) + "]";
    const json& part = v[i];
    if (!part.is_object()) wrong_type(p, "an object", part);
    for (const auto& [k, x] : part.items())
      if (k != "type" && k != "text") bad(p + "." + k, "is not supported", "unsupported_parameter");
    if (!part.contains("type") || string(part["type"], p + ".type") != "text")
      bad(p + ".type", "must be \"text\" (only text content is supported)");
    if (!part.contains("text")) bad(p + ".text", "is required", "missing_required_parameter");
    text += string(part["text"], p + ".text");
  }
  return text;
}

std::vector<int> token_ids(const json& v, const std::string& param) {
  std::vector<int> ids;
  for (size_t i = 0; i < v.size(); ++i)
    ids.push_back(static_cast<int>(integer(v[i], param + "[" + std::to_string(i) + "]", 0, std::numeric_limits<int>::max())));
  return ids;
}

void parse_prompt(const json& v, OpenAIRequest& r) {
  if (v.is_string()) {
    r.prompts.push_back(v.get<std::string>());
    return;
  }
  if (!v.is_array() || v.empty()) wrong_type("prompt", "a string, an array of strings or an array of token ids", v);
  if (v[0].is_number()) {
    r.prompt_ids.push_back(token_ids(v, "prompt"));
    return;
  }
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string p = "prompt[" + std::to_string(i) + "]";
    if (v[i].is_string()) {
      if (!r.prompt_ids.empty()) wrong_type(p, "an array of token ids like the others", v[i]);
      r.prompts.push_back(v[i].get<std::string>());
    } else if (v[i].is_array()) {
      if (!r.prompts.empty()) wrong_type(p, "a string like the others", v[i]);
      r.prompt_ids.push_back(token_ids(v[i], p));
    } else {
      wrong_type(p, "a string or an array of token ids", v[i]);
    }
  }
}

void parse_messages(const json& v, OpenAIRequest& r) {
  if (!v.is_array()) wrong_type("messages", "an array", v);
  if (v.empty()) bad("messages", "must hold at least one message");
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string p = "messages[" + std::to_string(i) + "]";
    const json& m = v[i];
    if (!m.is_object()) wrong_type(p, "an object", m);
    for (const auto& [k, x] : m.items())
      if (k != "role" && k != "content" && !(k == "name" && x.is_null())) bad(p + "." + k, "is not supported", "unsupported_parameter");
    if (!m.contains("role")) bad(p + ".role", "is required", "missing_required_parameter");
    std::string role = string(m["role"], p + ".role");
    if (role == "developer") role = "system";   // OpenAI's newer name for the system role
    if (role != "system" && role != "user" && role != "assistant")
      bad(p + ".role", "must be system, developer, user or assistant, got \"" + role + "\"");
    if (!m.contains("content") || m["content"].is_null()) bad(p + ".content", "is required", "missing_required_parameter");
    r.messages.push_back({role, content(m["content"], p + ".content")});
  }
}

}  // namespace

OpenAIRequest parse_openai_request(const json& body, bool chat, int context_length) {
  if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object", "", "invalid_type");
  static const std::set<std::string> common = {"model", "max_tokens", "temperature", "top_p", "stop", "seed", "n",
                                               "stream", "stream_options", "logprobs", "presence_penalty",
                                               "frequency_penalty", "top_k", "min_p", "repetition_penalty", "ignore_eos",
                                               "user"};
  OpenAIRequest r;
  r.chat = chat;
  r.params.max_tokens = chat ? context_length : 16;
  for (const auto& [key, v] : body.items()) {
    const bool known = common.count(key) ||
                       (chat ? key == "messages" || key == "max_completion_tokens" || key == "top_logprobs" : key == "prompt");
    if (!known) throw ApiError(400, "'" + key + "' is not supported by this server", key, "unsupported_parameter");
  }
  auto get = [&](const char* key) -> const json* {
    auto it = body.find(key);
    return it == body.end() || it->is_null() ? nullptr : &*it;
  };
  if (auto v = get("model")) r.model = string(*v, "model");
  if (chat) {
    if (!get("messages")) bad("messages", "is required", "missing_required_parameter");
    parse_messages(*get("messages"), r);
  } else {
    if (!get("prompt")) bad("prompt", "is required", "missing_required_parameter");
    parse_prompt(*get("prompt"), r);
  }
  const int64_t max_len = std::max(1, context_length);
  if (auto v = get("max_tokens")) r.params.max_tokens = static_cast<int>(integer(*v, "max_tokens", 1, max_len));
  if (auto v = get("max_completion_tokens"))
    r.params.max_tokens = static_cast<int>(integer(*v, "max_completion_tokens", 1, max_len));
  if (auto v = get("temperature")) r.params.temperature = static_cast<float>(number(*v, "temperature", 0, 2));
  if (auto v = get("top_p")) {
    r.params.top_p = static_cast<float>(number(*v, "top_p", 0, 1));
    if (r.params.top_p <= 0) bad("top_p", "must be greater than 0");
  }
  if (auto v = get("stop")) {
    if (v->is_string()) {
      r.params.stop.push_back(v->get<std::string>());
    } else if (v->is_array()) {
      for (size_t i = 0; i < v->size(); ++i) r.params.stop.push_back(string((*v)[i], "stop[" + std::to_string(i) + "]"));
    } else {
      wrong_type("stop", "a string or an array of strings", *v);
    }
    for (const auto& s : r.params.stop)
      if (s.empty()) bad("stop", "must not hold an empty string");
  }
  if (auto v = get("seed"))
    r.params.seed = static_cast<uint64_t>(integer(*v, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()));
  if (auto v = get("n")) r.params.n = static_cast<int>(integer(*v, "n", 1, 64));
  if (auto v = get("stream")) r.stream = boolean(*v, "stream");
  if (auto v = get("stream_options")) {
    if (!v->is_object()) wrong_type("stream_options", "an object", *v);
    for (const auto& [k, x] : v->items()) {
      if (k != "include_usage") bad("stream_options." + k, "is not supported", "unsupported_parameter");
      if (!x.is_null()) r.include_usage = boolean(x, "stream_options.include_usage");
    }
    if (!r.stream) bad("stream_options", "is only allowed when 'stream' is true");
  }
  if (chat) {
    if (auto v = get("logprobs")) r.logprobs = boolean(*v, "logprobs");
    if (auto v = get("top_logprobs")) {
      r.top_logprobs = static_cast<int>(integer(*v, "top_logprobs", 0, 20));
      if (!r.logprobs) bad("top_logprobs", "needs 'logprobs' to be true");
    }
  } else if (auto v = get("logprobs")) {
    r.logprobs = true;
    r.top_logprobs = static_cast<int>(integer(*v, "logprobs", 0, 5));
  }
  if (r.logprobs) r.params.logprobs = r.top_logprobs;
  if (auto v = get("presence_penalty")) r.params.presence_penalty = static_cast<float>(number(*v, "presence_penalty", -2, 2));
  if (auto v = get("frequency_penalty")) r.params.frequency_penalty = static_cast<float>(number(*v, "frequency_penalty", -2, 2));
  if (auto v = get("top_k")) r.params.top_k = static_cast<int>(integer(*v, "top_k", -1, std::numeric_limits<int>::max()));
  if (auto v = get("min_p")) r.params.min_p = static_cast<float>(number(*v, "min_p", 0, 1));
  if (auto v = get("repetition_penalty")) {
    r.params.repetition_penalty = static_cast<float>(number(*v, "repetition_penalty", 0, 1e6));
    if (r.params.repetition_penalty <= 0) bad("repetition_penalty", "must be greater than 0");
  }
  if (auto v = get("ignore_eos")) r.params.ignore_eos = boolean(*v, "ignore_eos");   // vLLM's extra, for benchmarks
  if (auto v = get("user")) string(*v, "user");   // for the caller's bookkeeping; generation ignores it
  return r;
}

}  // namespace llmwb::server
