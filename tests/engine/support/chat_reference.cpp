#include "support/chat_reference.h"

#include "support/test_support.h"

namespace llmwb::test {
namespace {
const std::string kDir = std::string(LLMWB_SOURCE_DIR) + "/tests/data/chat_templates/";
}

ChatReferenceCase chat_reference_case(const nlohmann::json& e) {
  ChatReferenceCase c;
  c.template_name = e.at("template");
  for (const auto& m : e.at("messages")) c.messages.push_back({m.at("role"), m.at("content")});
  ChatOptions& o = c.options;
  o.add_generation_prompt = e.at("add_generation_prompt");
  if (e.contains("enable_thinking")) o.enable_thinking = e.at("enable_thinking").get<bool>();
  if (e.contains("date_string")) o.date_string = e.at("date_string");
  c.label = c.template_name + " / " + e.at("conversation").get<std::string>() +
            (o.add_generation_prompt ? " / generation prompt" : "") +
            (o.enable_thinking ? (*o.enable_thinking ? " / thinking on" : " / thinking off") : "");
  return c;
}

nlohmann::json chat_reference_json(const std::string& file) { return nlohmann::json::parse(read_file(kDir + file)); }

ChatTemplate chat_reference_template(const std::string& name) {
  return recognize_chat_template(read_file(kDir + name + ".jinja"), "");
}

}  // namespace llmwb::test
