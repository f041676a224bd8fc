// llmwb/chat_template.h — turning a conversation into the prompt text a model was tuned on.
//
// Only the prompt formats of the Llama family and its common fine-tunes are supported, each
// written out by hand (no Jinja interpreter): the format is recognized from the model's
// tokenizer.chat_template (or its name) and then rendered here.
//
// BOS convention: the rendered text never starts with "<s>" / "<|begin_of_text|>"; the engine
// adds the first BOS token itself when it tokenizes the prompt. Later BOS/EOS markers that a
// format places between turns (Llama-2's "</s><s>", Zephyr's "</s>") are part of the
// returned text; the engine tokenizes chat prompts so that the text of a control piece
// becomes that token (Tokenizer::encode_with_special), as llama.cpp does.
#pragma once

#include <string>
#include <vector>

namespace llmwb {

enum class ChatFormat {
  Completion,  // base models (stories260K): plain text, no markers
  Llama2,      // [INST] <<SYS>>\n...\n<</SYS>>\n\n... [/INST]
  ChatML,      // <|im_start|>role\n...<|im_end|>\n
  Zephyr,      // <|role|>\n...</s>\n
  Llama3,      // <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>
};

struct ChatMessage {
  std::string role;     // "system", "user" or "assistant"
  std::string content;
};

// The prompt text for `messages`. With add_generation_prompt the text ends where the
// assistant's next reply begins (e.g. "<|im_start|>assistant\n"); Llama2 and Completion
// need no such text. A "system" message is used where the format has a place for it
// (Llama-2 folds the first one into the first [INST]; Completion puts it first).
// Throws llmwb::Error("chat message N", ...) for a role other than system/user/assistant.
std::string apply_chat_template(ChatFormat format, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt);

// Recognizes the format from a Jinja chat template's markers ([INST], <|im_start|>, <|user|>,
// <|start_header_id|>); when the template is empty, from hints in the model name ("chat",
// "instruct", "zephyr", ...). Nothing recognized -> Completion.
ChatFormat detect_chat_format(const std::string& jinja_template_text, const std::string& model_name);

// "completion", "llama2", "chatml", "zephyr", "llama3".
const char* chat_format_name(ChatFormat format);
// Parses a name as chat_format_name writes it (case-insensitive); false if unknown.
bool chat_format_from_name(const std::string& name, ChatFormat* format);
// All formats, in enum order (for menus and --help).
std::vector<ChatFormat> all_chat_formats();

// Text that ends an assistant turn in this format; generation should stop at any of them
// (in addition to the EOS token). Completion has none.
std::vector<std::string> chat_stop_strings(ChatFormat format);

}  // namespace llmwb
