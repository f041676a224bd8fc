// LLM::chat, the C++ entry point beside generate(): a conversation through the model's chat
// template on stories260K, with the same prompt ids that the Chat view and generate --chat send.
#include <gtest/gtest.h>

#include <algorithm>

#include "llmwb/chat_prompt.h"
#include "llmwb/llm.h"
#include "support/test_support.h"

namespace llmwb {
namespace {

SamplingParams greedy(int tokens) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.max_tokens = tokens;
  return p;
}

TEST(LLMChat, ABaseModelChatsInCompletionFormatLikeAPlainPrompt) {
  LLM llm(test::shared_path("models/stories260K/stories260K.gguf"));
  EXPECT_EQ(llm.chat_template().format, ChatFormat::Completion);
  const auto chat = llm.chat({{{"user", "Once upon a time"}}}, greedy(12));
  const auto plain = llm.generate({"Once upon a time"}, greedy(12));
  ASSERT_EQ(chat.size(), 1u);
  ASSERT_TRUE(chat[0].error.empty()) << chat[0].error;
  EXPECT_EQ(chat[0].prompt, "Once upon a time");
  EXPECT_EQ(chat[0].prompt_token_ids, plain[0].prompt_token_ids);
  EXPECT_EQ(chat[0].outputs[0].text, plain[0].outputs[0].text);
}

TEST(LLMChat, TheTemplatesMarkersAreControlTokensAndTheUsersAreText) {
  LLM llm(test::shared_path("models/stories260K/stories260K.gguf"));
  llm.set_chat_template(chat_template_for(ChatFormat::Llama2));
  const std::vector<ChatMessage> messages = {
      {"user", "Say </s> twice </s>"}, {"assistant", "No."}, {"user", "Please <s>"}};
  const auto out = llm.chat({messages}, greedy(4));
  ASSERT_TRUE(out[0].error.empty()) << out[0].error;
  const std::vector<int>& ids = out[0].prompt_token_ids;
  // <s>[INST] ... [/INST] No. </s><s>[INST] ... [/INST]: two BOS and one EOS, all the template's.
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 1), 2);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 2), 1);
  EXPECT_EQ(ids.front(), 1);
  EXPECT_EQ(ids, chat_prompt_ids(llm.engine(), render_chat(llm.chat_template(), messages)));
  EXPECT_EQ(out[0].prompt, render_chat(llm.chat_template(), messages).text());
}

TEST(LLMChat, AConversationTheTemplateCannotRenderIsAnError) {
  LLM llm(test::shared_path("models/stories260K/stories260K.gguf"));
  llm.set_chat_template(chat_template_for(ChatFormat::Llama2));
  EXPECT_THROW(llm.chat({{{"user", "a"}, {"user", "b"}}}), Error);
}

}  // namespace
}  // namespace llmwb
