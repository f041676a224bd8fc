// chat_flags.h — `generate --chat`: the conversation and template switches from the command
// line, so that the CLI sends what the Chat view sends for the same conversation.
#pragma once

#include <string>
#include <vector>

#include "args.h"
#include "llmwb/chat_template.h"

namespace llmwb::cli {

const std::vector<std::string>& chat_value_flags();  // system, messages-file, chat-format
const std::vector<std::string>& chat_bool_flags();   // chat, think, no-think, verbose-prompt
const char* chat_flags_usage();

struct ChatRequestFlags {
  std::vector<ChatMessage> messages;  // --system, then --messages-file, then --prompt as the user turn
  ChatOptions options;
  std::string format;  // --chat-format: "auto" (the model's) or a chat_format_name
};

// Throws UsageError for flags that make no sense together (two --prompt, --think with
// --no-think, an unknown --chat-format, chat flags without --chat) and llmwb::Error(FILE, ...)
// for a messages file that cannot be read, is not JSON, or holds a message with an unknown
// role or without string content.
ChatRequestFlags chat_request_from(const Args& a);

// Reads a JSON array of {"role": ..., "content": ...} objects.
std::vector<ChatMessage> read_messages_file(const std::string& path);

}  // namespace llmwb::cli
