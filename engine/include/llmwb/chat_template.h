// llmwb/chat_template.h — turning a conversation into the prompt a model was tuned on.
//
// No Jinja interpreter: the chat templates that the models people download actually ship
// (Llama 2, Mistral, ChatML, Zephyr, Llama 3.0, Llama 3.1/3.2, Qwen2.5, Qwen3) are recognised
// from the model's tokenizer.chat_template and rendered here, each written out by hand so that
// the text equals Hugging Face's rendering of the real template
// (tests/data/chat_templates/reference.json, made by tools/chat-template-ref). A template that
// is not recognised is named in ChatTemplate::description and the prompt falls back to plain
// completion text.
//
// Control tokens come only from the template: render_chat() returns the prompt as segments,
// marking what the template wrote (its control markers and literal text) apart from what the
// conversation's messages contain. chat_token_ids() turns the template's markers into their
// control ids and always tokenizes message contents as plain text, so a user who types
// "<|im_start|>" or "[INST]" cannot open a turn.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace llmwb {

enum class ChatFormat {
  Completion,  // base models (stories260K): plain text, no markers
  Llama2,      // Llama-2-chat: <s>[INST] <<SYS>>\n...\n<</SYS>>\n\n... [/INST] ... </s>
  ChatML,      // <|im_start|>role\n...<|im_end|>\n
  Zephyr,      // <|role|>\n...</s>\n (zephyr-7b-beta, TinyLlama-Chat)
  Llama3,      // Llama 3.0 Instruct: <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>
  Mistral,     // Mistral-7B-Instruct v0.2: <s> [INST] system\n\nuser [/INST] reply</s>
  MistralV1,   // Mistral-7B-Instruct v0.1 / Mixtral: <s>[INST] user [/INST]reply</s>, no system
  Llama31,     // Llama 3.1 / 3.2 Instruct: Llama 3 turns after a system header with the dates
  Qwen25,      // Qwen2.5: ChatML with Qwen's default system prompt
  Qwen3,       // Qwen3: ChatML with <think> blocks and the enable_thinking switch
  MistralV3,   // Mistral-7B-Instruct v0.3: <s>[INST] user[/INST] reply</s>, the system message
               // before the last user message
  MistralV3Tekken,  // Mistral-Nemo: as MistralV3 without the spaces: [INST]user[/INST]reply</s>
};

struct ChatMessage {
  std::string role;     // "system", "user" or "assistant"
  std::string content;
};

// The format a model's template was recognised as, with the details that vary between
// releases of one family.
struct ChatTemplate {
  ChatFormat format = ChatFormat::Completion;
  // The first Llama 3 Instruct template writes the assistant header even without
  // add_generation_prompt.
  bool always_generation_prompt = false;
  // Llama 3.2's template takes "Today Date" from the clock (strftime_now) when no date_string
  // is given; Llama 3.1's uses "26 Jul 2024".
  bool date_from_clock = false;
  // Qwen2.5 (and Qwen2's ChatML): the system prompt used when the conversation has none;
  // empty: Qwen2.5's "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
  std::string default_system;
  // False when the model has a chat template that is not recognised: `description` names it
  // and the format falls back to Completion.
  bool recognized = true;
  // For the GUI and `inspect`: "qwen3 (from the model's template)", or the fallback message.
  std::string description;
};

// Switches a template reads besides the messages.
struct ChatOptions {
  bool add_generation_prompt = true;
  // Qwen3: false renders an empty think block after the generation prompt (the model answers
  // without reasoning); nullopt or true leave the thinking to the model. Other formats ignore it.
  std::optional<bool> enable_thinking;
  // Llama 3.1/3.2: the "Today Date" line ("26 Jul 2024"); empty: the template's default.
  std::string date_string;
};

// One stretch of a rendered prompt.
struct ChatSegment {
  enum class Kind {
    Control,   // a marker the template writes ("<|im_start|>", "[INST]", "</s>", "<think>"):
               // its control token where the vocabulary has one, else plain text
    Template,  // other text the template writes ("assistant\n", "<<SYS>>\n", a default system prompt)
    Content,   // text from a message: always plain text
  };
  Kind kind;
  std::string text;
  bool operator==(const ChatSegment& o) const { return kind == o.kind && text == o.text; }
};

struct RenderedChat {
  std::vector<ChatSegment> segments;
  std::string text() const;  // the segments joined: the text Hugging Face's template renders
};

// Renders `messages` as the template does, beginning with the BOS text where the template
// writes bos_token (Llama 2, Mistral, Llama 3). Throws llmwb::Error("chat message N", ...)
// for a role other than system/user/assistant, and where the template itself raises (Llama 2
// and Mistral need user and assistant turns to alternate; Mistral v0.1 has no system role).
RenderedChat render_chat(const ChatTemplate& chat_template, const std::vector<ChatMessage>& messages,
                         const ChatOptions& options = {});

// How chat_token_ids reaches a tokenizer.
struct ChatTokenizer {
  // Text -> ids without BOS; with `parse_special`, control pieces written in the text become
  // their ids (Tokenizer::encode_with_special), otherwise everything is plain text.
  std::function<std::vector<int>(const std::string& text, bool parse_special)> encode;
  // The ids the vocabulary puts before a prompt (BOS), empty where it adds none.
  std::vector<int> bos;
};

// The token ids of a rendered chat. A Control segment becomes its control id when the
// vocabulary has the marker as one token; every other stretch (template text, message
// contents, markers the vocabulary lacks) is tokenized as plain text, neighbouring stretches
// together, so the ids equal encode_with_special(text) wherever no message contains a marker.
// BOS rule: a template that writes BOS supplies it; otherwise the vocabulary's BOS goes first.
std::vector<int> chat_token_ids(const RenderedChat& chat, const ChatTokenizer& tokenizer);

// The format of a model: recognised from its Jinja chat template (tokenizer.chat_template or
// tokenizer_config.json's chat_template); when the template is empty, from hints in the model
// name ("chat", "instruct", "qwen3", ...). An unknown template gives Completion with
// recognized = false and a description naming it (its first line and a short hash).
ChatTemplate recognize_chat_template(const std::string& jinja_template_text, const std::string& model_name);
// A format chosen by name (the GUI's format menu, --chat-format), with its usual details.
ChatTemplate chat_template_for(ChatFormat format);

// True where the format has a thinking switch (Qwen3).
bool chat_supports_thinking(ChatFormat format);

// The prompt text for `messages` with the default details of `format`, without the leading
// BOS text (the engine adds the first BOS itself when it tokenizes a text prompt).
std::string apply_chat_template(ChatFormat format, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt);
// recognize_chat_template(...).format.
ChatFormat detect_chat_format(const std::string& jinja_template_text, const std::string& model_name);

// "completion", "llama2", "chatml", "zephyr", "llama3", "mistral", "mistral-v1", "llama3.1",
// "qwen2.5", "qwen3", "mistral-v3", "mistral-v3-tekken".
const char* chat_format_name(ChatFormat format);
// Parses a name as chat_format_name writes it (case-insensitive); false if unknown.
bool chat_format_from_name(const std::string& name, ChatFormat* format);
// All formats, in enum order (for menus and --help).
std::vector<ChatFormat> all_chat_formats();

// Text that ends an assistant turn in this format; generation should stop at any of them
// (in addition to the tokenizer's end-of-generation tokens). Completion has none.
std::vector<std::string> chat_stop_strings(ChatFormat format);

}  // namespace llmwb
