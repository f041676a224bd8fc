#include "llmwb/chat_template.h"

#include <algorithm>
#include <cctype>

#include "llmwb/errors.h"

namespace llmwb {
namespace {

std::string trim(const std::string& s) {
  const auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  auto b = std::find_if_not(s.begin(), s.end(), space);
  auto e = std::find_if_not(s.rbegin(), s.rend(), space).base();
  return b < e ? std::string(b, e) : std::string();
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool contains(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

void check_roles(const std::vector<ChatMessage>& messages) {
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string& r = messages[i].role;
    if (r != "system" && r != "user" && r != "assistant")
      throw Error("chat message " + std::to_string(i), "unknown role '" + r + "' (expected system, user or assistant)");
  }
}

// Meta's reference chat_completion (llama/generation.py) and the Hugging Face template of
// Llama-2-chat: the first system prompt is folded into the first user turn inside
// <<SYS>> ... <</SYS>>; contents are stripped; every exchange ends with EOS and the next
// begins with BOS. Lenient about order: consecutive user turns each get their own [INST].
std::string render_llama2(const std::vector<ChatMessage>& messages) {
  std::string system;
  bool have_system = false;
  for (const ChatMessage& m : messages) {
    if (m.role == "system") {
      system = trim(m.content);
      have_system = true;
      break;
    }
  }
  std::string out;
  bool system_used = false;
  auto open_inst = [&](const std::string& user) {
    if (!out.empty()) out += "<s>";  // the first BOS is the engine's
    out += "[INST] ";
    if (have_system && !system_used) {
      out += "<<SYS>>\n" + system + "\n<</SYS>>\n\n";
      system_used = true;
    }
    out += user + " [/INST]";
  };
  for (const ChatMessage& m : messages) {
    if (m.role == "user") {
      open_inst(trim(m.content));
    } else if (m.role == "assistant") {
      out += ' ';
      out += trim(m.content);
      out += " </s>";
    }
  }
  // A system prompt with no user turn yet still goes somewhere the model will see it.
  if (have_system && !system_used) open_inst("");
  return out;
}

}  // namespace

std::string apply_chat_template(ChatFormat format, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt) {
  check_roles(messages);
  std::string out;
  switch (format) {
    case ChatFormat::Completion: {
      // Base models see plain text: the system prompt first, then the turns, one per line.
      std::vector<const ChatMessage*> order;
      for (const ChatMessage& m : messages)
        if (m.role == "system") order.push_back(&m);
      for (const ChatMessage& m : messages)
        if (m.role != "system") order.push_back(&m);
      for (size_t i = 0; i < order.size(); ++i) {
        if (i) out += '\n';
        out += order[i]->content;
      }
      return out;
    }
    case ChatFormat::Llama2:
      // The reply follows " [/INST]" directly: there is no separate generation prompt.
      return render_llama2(messages);
    case ChatFormat::ChatML:
      for (const ChatMessage& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
      if (add_generation_prompt) out += "<|im_start|>assistant\n";
      return out;
    case ChatFormat::Zephyr:
      for (const ChatMessage& m : messages) out += "<|" + m.role + "|>\n" + m.content + "</s>\n";
      if (add_generation_prompt) out += "<|assistant|>\n";
      return out;
    case ChatFormat::Llama3:
      // Meta's Llama 3 template trims every content; <|begin_of_text|> is the engine's BOS.
      for (const ChatMessage& m : messages)
        out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + trim(m.content) + "<|eot_id|>";
      if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      return out;
  }
  return out;
}

ChatFormat detect_chat_format(const std::string& jinja_template_text, const std::string& model_name) {
  const std::string& t = jinja_template_text;
  // Each marker is unique to its family; Llama 3 and ChatML are checked first because their
  // templates can mention "user" in ways that look like Zephyr's tags.
  if (contains(t, "<|start_header_id|>")) return ChatFormat::Llama3;
  if (contains(t, "<|im_start|>")) return ChatFormat::ChatML;
  if (contains(t, "<|user|>")) return ChatFormat::Zephyr;
  if (contains(t, "[INST]")) return ChatFormat::Llama2;
  if (!trim(t).empty()) return ChatFormat::Completion;  // a template we do not know

  // No template: the name is the only hint (e.g. llama2.c or Hugging Face folders without
  // tokenizer_config.json). Only names that say "chat"/"instruct" are chat models.
  const std::string n = lower(model_name);
  const bool chat = contains(n, "chat") || contains(n, "instruct");
  if (contains(n, "zephyr")) return ChatFormat::Zephyr;
  if (contains(n, "tinyllama") && chat) return ChatFormat::Zephyr;
  if (contains(n, "chatml") || contains(n, "openhermes") || contains(n, "qwen")) return ChatFormat::ChatML;
  if ((contains(n, "llama-3") || contains(n, "llama3")) && chat) return ChatFormat::Llama3;
  if ((contains(n, "llama-2") || contains(n, "llama2") || contains(n, "mistral")) && chat) return ChatFormat::Llama2;
  return ChatFormat::Completion;
}

const char* chat_format_name(ChatFormat format) {
  switch (format) {
    case ChatFormat::Completion: return "completion";
    case ChatFormat::Llama2: return "llama2";
    case ChatFormat::ChatML: return "chatml";
    case ChatFormat::Zephyr: return "zephyr";
    case ChatFormat::Llama3: return "llama3";
  }
  return "completion";
}

std::vector<ChatFormat> all_chat_formats() {
  return {ChatFormat::Completion, ChatFormat::Llama2, ChatFormat::ChatML, ChatFormat::Zephyr, ChatFormat::Llama3};
}

bool chat_format_from_name(const std::string& name, ChatFormat* format) {
  const std::string n = lower(trim(name));
  for (ChatFormat f : all_chat_formats()) {
    if (n == chat_format_name(f)) {
      if (format) *format = f;
      return true;
    }
  }
  return false;
}

std::vector<std::string> chat_stop_strings(ChatFormat format) {
  // The text that closes an assistant turn, and the start of the next user turn for models
  // that skip the closing marker.
  switch (format) {
    case ChatFormat::Completion: return {};
    case ChatFormat::Llama2: return {"</s>", "[INST]"};
    case ChatFormat::ChatML: return {"<|im_end|>", "<|im_start|>"};
    case ChatFormat::Zephyr: return {"</s>", "<|user|>"};
    case ChatFormat::Llama3: return {"<|eot_id|>", "<|start_header_id|>"};
  }
  return {};
}

}  // namespace llmwb
