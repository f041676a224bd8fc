// chat_reference.h — the chat template test data (tests/data/chat_templates/): the real
// templates and the cases of reference.json / reference_ids.json that tools/chat-template-ref
// writes.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "llmwb/chat_template.h"

namespace llmwb::test {

// One rendering of reference.json: a template file's name, a conversation and the switches.
struct ChatReferenceCase {
  std::string template_name;  // "qwen3" for qwen3.jinja
  std::vector<ChatMessage> messages;
  ChatOptions options;
  std::string label;  // "qwen3 / several-turns / generation prompt / thinking off", for messages
};

ChatReferenceCase chat_reference_case(const nlohmann::json& entry);
// A JSON file of tests/data/chat_templates/ ("reference.json").
nlohmann::json chat_reference_json(const std::string& file);
// The template of tests/data/chat_templates/NAME.jinja, recognised.
ChatTemplate chat_reference_template(const std::string& name);

}  // namespace llmwb::test
