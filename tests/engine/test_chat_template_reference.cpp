// The built-in chat formats against Hugging Face's Jinja: every real template in
// tests/data/chat_templates/ is recognised as its format, and rendering each conversation of
// reference.json (made by tools/chat-template-ref with @huggingface/jinja) gives the same
// text, or an error where the template raises one.
#include <gtest/gtest.h>

#include <map>

#include "llmwb/chat_template.h"
#include "llmwb/errors.h"
#include "support/chat_reference.h"

namespace llmwb {
namespace {

// Each template file and the format it must be recognised as.
const std::map<std::string, ChatFormat> kExpected = {
    {"llama2-chat", ChatFormat::Llama2},       {"mistral-v1", ChatFormat::MistralV1},
    {"mistral-v2", ChatFormat::Mistral},       {"chatml", ChatFormat::ChatML},
    {"zephyr", ChatFormat::Zephyr},            {"llama3-tokenizer", ChatFormat::Llama3},
    {"llama3-instruct", ChatFormat::Llama3},   {"llama3.1", ChatFormat::Llama31},
    {"llama3.2", ChatFormat::Llama31},         {"qwen2.5", ChatFormat::Qwen25},
    {"qwen3", ChatFormat::Qwen3},             {"qwen2", ChatFormat::Qwen25},
    {"mistral-v3", ChatFormat::MistralV3},     {"mistral-v3-tekken", ChatFormat::MistralV3Tekken},
};

ChatTemplate recognized(const std::string& name) { return test::chat_reference_template(name); }

TEST(ChatTemplateReference, EveryRealTemplateIsRecognisedAsItsFormat) {
  for (const auto& [name, format] : kExpected) {
    const ChatTemplate t = recognized(name);
    EXPECT_TRUE(t.recognized) << name;
    EXPECT_EQ(chat_format_name(t.format), std::string(chat_format_name(format))) << name;
  }
  // The release details: Llama 3's first template always opens the assistant turn; 3.2 asks
  // the clock for today's date, 3.1 does not.
  EXPECT_TRUE(recognized("llama3-tokenizer").always_generation_prompt);
  EXPECT_FALSE(recognized("llama3-instruct").always_generation_prompt);
  EXPECT_TRUE(recognized("llama3.2").date_from_clock);
  EXPECT_FALSE(recognized("llama3.1").date_from_clock);
  // Qwen2's ChatML has its own default system prompt; Qwen2.5's is the built-in one.
  EXPECT_EQ(recognized("qwen2").default_system, "You are a helpful assistant.");
  EXPECT_EQ(recognized("qwen2.5").default_system, "");
}

TEST(ChatTemplateReference, RenderingEqualsHuggingFaceJinjaForEveryConversation) {
  const nlohmann::json ref = test::chat_reference_json("reference.json");
  ASSERT_GT(ref.size(), 300u);
  std::map<std::string, int> checked;
  for (const auto& e : ref) {
    const test::ChatReferenceCase c = test::chat_reference_case(e);
    const std::string& name = c.template_name;
    const std::vector<ChatMessage>& messages = c.messages;
    const ChatOptions& o = c.options;
    const std::string& what = c.label;
    const ChatTemplate t = recognized(name);
    if (e.contains("error")) {
      EXPECT_THROW(render_chat(t, messages, o), Error) << what << ": the template raises " << e.at("error");
    } else {
      try {
        EXPECT_EQ(render_chat(t, messages, o).text(), e.at("text").get<std::string>()) << what;
      } catch (const std::exception& ex) {
        ADD_FAILURE() << what << ": " << ex.what();
      }
    }
    ++checked[name];
  }
  EXPECT_EQ(checked.size(), kExpected.size());
}

TEST(ChatTemplateReference, AnUnknownTemplateIsNamedAndFallsBackToCompletion) {
  const ChatTemplate t = recognize_chat_template("{% for m in messages %}### {{ m.role }}: {{ m.content }}\n{% endfor %}",
                                                 "SomeModel-Instruct");
  EXPECT_FALSE(t.recognized);
  EXPECT_EQ(t.format, ChatFormat::Completion);
  EXPECT_NE(t.description.find("unrecognised chat template \"{% for m in messages %}### {{ m.role }}"),
            std::string::npos)
      << t.description;
  EXPECT_NE(t.description.find("fnv1a "), std::string::npos) << t.description;
  EXPECT_NE(t.description.find("completion"), std::string::npos) << t.description;
}

}  // namespace
}  // namespace llmwb
