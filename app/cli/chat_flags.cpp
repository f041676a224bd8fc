#include "chat_flags.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "llmwb/errors.h"

namespace llmwb::cli {

const std::vector<std::string>& chat_value_flags() {
  static const std::vector<std::string> f = {"system", "messages-file", "chat-format"};
  return f;
}

const std::vector<std::string>& chat_bool_flags() {
  static const std::vector<std::string> f = {"chat", "think", "no-think", "verbose-prompt"};
  return f;
}

const char* chat_flags_usage() {
  return "chat (the model's chat template, as the Chat view sends it):\n"
         "  --chat                  render the prompt with the chat template; --prompt is the user message\n"
         "  --system TEXT           a system message first\n"
         "  --messages-file FILE    the conversation so far: a JSON array of {\"role\", \"content\"}\n"
         "                          (roles system, user, assistant); --prompt adds a last user turn\n"
         "  --chat-format NAME      auto (the model's template) or one of the built-in formats\n"
         "  --think / --no-think    Qwen3's enable_thinking switch (default: the template's, thinking on)\n"
         "  --verbose-prompt        print the rendered prompt and its token ids to stderr\n";
}

std::vector<ChatMessage> read_messages_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path, "cannot open the messages file");
  std::stringstream s;
  s << f.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(s.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(path, std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_array()) throw Error(path, "expected a JSON array of {\"role\", \"content\"} objects");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const nlohmann::json& m = j[i];
    const std::string where = "message " + std::to_string(i + 1);
    if (!m.is_object()) throw Error(path, where + ": expected an object with \"role\" and \"content\"");
    if (!m.contains("role") || !m["role"].is_string()) throw Error(path, where + ": \"role\" must be a string");
    if (!m.contains("content") || !m["content"].is_string())
      throw Error(path, where + ": \"content\" must be a string");
    const std::string role = m["role"];
    if (role != "system" && role != "user" && role != "assistant")
      throw Error(path, where + ": unknown role '" + role + "' (expected system, user or assistant)");
    out.push_back({role, m["content"]});
  }
  return out;
}

ChatRequestFlags chat_request_from(const Args& a) {
  ChatRequestFlags r;
  const bool chat = a.flag("chat");
  for (const auto& list : {chat_value_flags(), chat_bool_flags()})
    for (const std::string& f : list)
      if (!chat && f != "chat" && a.has(f)) throw UsageError("--" + f + " needs --chat");
  if (!chat) return r;
  if (a.flag("think") && a.flag("no-think")) throw UsageError("--think and --no-think contradict each other");
  if (a.all("prompt").size() > 1) throw UsageError("--chat takes one --prompt (the user message)");
  if (a.has("prompts-file")) throw UsageError("--chat takes the conversation from --messages-file, not --prompts-file");
  r.format = a.str("chat-format", "auto");
  if (r.format != "auto" && !chat_format_from_name(r.format, nullptr)) {
    std::string names;
    for (ChatFormat f : all_chat_formats()) names += std::string(names.empty() ? "" : ", ") + chat_format_name(f);
    throw UsageError("--chat-format: unknown format '" + r.format + "' (auto, " + names + ")");
  }
  if (a.has("system")) r.messages.push_back({"system", a.str("system")});
  if (a.has("messages-file")) {
    const std::vector<ChatMessage> more = read_messages_file(a.str("messages-file"));
    r.messages.insert(r.messages.end(), more.begin(), more.end());
  }
  if (a.has("prompt")) r.messages.push_back({"user", a.str("prompt")});
  if (r.messages.empty()) throw UsageError("--chat needs a --prompt or a --messages-file");
  if (a.flag("think")) r.options.enable_thinking = true;
  if (a.flag("no-think")) r.options.enable_thinking = false;
  return r;
}

}  // namespace llmwb::cli
