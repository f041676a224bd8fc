// Chat templates: each format renders a conversation exactly as the model family's reference
// template does, and the format is recognized from real tokenizer.chat_template texts.
#include <gtest/gtest.h>

#include <algorithm>

#include "llmwb/chat_template.h"
#include "llmwb/errors.h"

namespace llmwb {
namespace {

// A system prompt and two user turns with one assistant reply between them.
std::vector<ChatMessage> conversation() {
  return {{"system", "You are terse."},
          {"user", "Hi!"},
          {"assistant", "Hello."},
          {"user", "Name a color."}};
}

TEST(ChatTemplate, Llama2FoldsSystemIntoFirstInstAndSeparatesTurnsWithEosBos) {
  // Meta's llama/generation.py chat_completion; the leading <s> is the engine's BOS.
  EXPECT_EQ(apply_chat_template(ChatFormat::Llama2, conversation(), true),
            "[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\nHi! [/INST] Hello. </s><s>[INST] Name a color. [/INST]");
}

TEST(ChatTemplate, Llama2StripsContentLikeTheReference) {
  EXPECT_EQ(apply_chat_template(ChatFormat::Llama2, {{"user", "  padded \n"}}, true), "[INST] padded [/INST]");
}

TEST(ChatTemplate, Llama2WithoutSystemPrompt) {
  EXPECT_EQ(apply_chat_template(ChatFormat::Llama2, {{"user", "a"}, {"assistant", "b"}, {"user", "c"}}, true),
            "[INST] a [/INST] b </s><s>[INST] c [/INST]");
}

TEST(ChatTemplate, ChatMLWrapsEveryMessageAndOpensAssistantTurn) {
  EXPECT_EQ(apply_chat_template(ChatFormat::ChatML, conversation(), true),
            "<|im_start|>system\nYou are terse.<|im_end|>\n"
            "<|im_start|>user\nHi!<|im_end|>\n"
            "<|im_start|>assistant\nHello.<|im_end|>\n"
            "<|im_start|>user\nName a color.<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(apply_chat_template(ChatFormat::ChatML, {{"user", "x"}}, false), "<|im_start|>user\nx<|im_end|>\n");
}

TEST(ChatTemplate, ZephyrEndsEveryMessageWithEos) {
  EXPECT_EQ(apply_chat_template(ChatFormat::Zephyr, conversation(), true),
            "<|system|>\nYou are terse.</s>\n"
            "<|user|>\nHi!</s>\n"
            "<|assistant|>\nHello.</s>\n"
            "<|user|>\nName a color.</s>\n"
            "<|assistant|>\n");
  EXPECT_EQ(apply_chat_template(ChatFormat::Zephyr, {{"user", "x"}}, false), "<|user|>\nx</s>\n");
}

TEST(ChatTemplate, Llama3UsesHeadersAndEotWithoutBeginOfText) {
  EXPECT_EQ(apply_chat_template(ChatFormat::Llama3, conversation(), true),
            "<|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nName a color.<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplate, CompletionConcatenatesContentsSystemFirst) {
  EXPECT_EQ(apply_chat_template(ChatFormat::Completion, conversation(), true),
            "You are terse.\nHi!\nHello.\nName a color.");
  // A system message given later still comes first.
  EXPECT_EQ(apply_chat_template(ChatFormat::Completion, {{"user", "Once upon a time"}, {"system", "Story:"}}, true),
            "Story:\nOnce upon a time");
  EXPECT_EQ(apply_chat_template(ChatFormat::Completion, {}, true), "");
}

TEST(ChatTemplate, UnknownRoleIsAnError) {
  try {
    apply_chat_template(ChatFormat::ChatML, {{"user", "a"}, {"tool", "b"}}, true);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "chat message 1: unknown role 'tool' (expected system, user or assistant)");
  }
}

// Real templates, as shipped in tokenizer_config.json / GGUF tokenizer.chat_template.
const char* kLlama2Jinja =
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = "
    "messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif "
    "%}{% for message in loop_messages %}{% if loop.index0 == 0 and system_message != false %}{% set content = "
    "'<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = "
    "message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + "
    "' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif "
    "%}{% endfor %}";
const char* kChatMLJinja =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + "
    "'\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
const char* kZephyrJinja =
    "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\\n' + message['content'] + "
    "eos_token }}\n{% elif message['role'] == 'system' %}\n{{ '<|system|>\\n' + message['content'] + eos_token "
    "}}\n{% elif message['role'] == 'assistant' %}\n{{ '<|assistant|>\\n'  + message['content'] + eos_token }}\n{% "
    "endif %}\n{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}";
const char* kLlama3Jinja =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + "
    "message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 "
    "%}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";

TEST(DetectChatFormat, RecognizesRealTemplates) {
  EXPECT_EQ(detect_chat_format(kLlama2Jinja, ""), ChatFormat::Llama2);
  EXPECT_EQ(detect_chat_format(kChatMLJinja, ""), ChatFormat::ChatML);
  EXPECT_EQ(detect_chat_format(kZephyrJinja, ""), ChatFormat::Zephyr);
  EXPECT_EQ(detect_chat_format(kLlama3Jinja, ""), ChatFormat::Llama3);
}

TEST(DetectChatFormat, TemplateWinsOverName) {
  EXPECT_EQ(detect_chat_format(kChatMLJinja, "Llama-2-7b-chat"), ChatFormat::ChatML);
  EXPECT_EQ(detect_chat_format("{{ messages[0]['content'] }}", "TinyLlama-1.1B-Chat"), ChatFormat::Completion);
}

TEST(DetectChatFormat, FallsBackToModelNameAndThenCompletion) {
  EXPECT_EQ(detect_chat_format("", "stories260K"), ChatFormat::Completion);
  EXPECT_EQ(detect_chat_format("", "Llama-2-7b-chat-hf"), ChatFormat::Llama2);
  EXPECT_EQ(detect_chat_format("", "Llama-2-7b-hf"), ChatFormat::Completion);
  EXPECT_EQ(detect_chat_format("", "TinyLlama-1.1B-Chat-v1.0"), ChatFormat::Zephyr);
  EXPECT_EQ(detect_chat_format("", "Meta-Llama-3-8B-Instruct"), ChatFormat::Llama3);
  EXPECT_EQ(detect_chat_format("", "zephyr-7b-beta"), ChatFormat::Zephyr);
}

TEST(ChatFormatName, RoundTripsEveryFormatAndRejectsUnknownNames) {
  for (ChatFormat f : all_chat_formats()) {
    ChatFormat parsed = ChatFormat::Completion;
    ASSERT_TRUE(chat_format_from_name(chat_format_name(f), &parsed)) << chat_format_name(f);
    EXPECT_EQ(parsed, f);
  }
  ChatFormat parsed = ChatFormat::Completion;
  EXPECT_TRUE(chat_format_from_name("ChatML", &parsed));
  EXPECT_EQ(parsed, ChatFormat::ChatML);
  EXPECT_FALSE(chat_format_from_name("vicuna", &parsed));
  EXPECT_EQ(parsed, ChatFormat::ChatML);
}

TEST(ChatStopStrings, EachChatFormatStopsAtItsTurnTerminator) {
  EXPECT_TRUE(chat_stop_strings(ChatFormat::Completion).empty());
  auto has = [](ChatFormat f, const std::string& s) {
    const auto v = chat_stop_strings(f);
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  EXPECT_TRUE(has(ChatFormat::Llama2, "</s>"));
  EXPECT_TRUE(has(ChatFormat::ChatML, "<|im_end|>"));
  EXPECT_TRUE(has(ChatFormat::Zephyr, "</s>"));
  EXPECT_TRUE(has(ChatFormat::Llama3, "<|eot_id|>"));
}

}  // namespace
}  // namespace llmwb
