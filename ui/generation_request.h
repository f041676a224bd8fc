// generation_request.h — one generation the GUI asks the EngineWorker to run.
#pragma once

#include <QMetaType>
#include <QString>

#include <optional>
#include <string>
#include <vector>

#include "llmwb/chat_template.h"
#include "llmwb/sampling_params.h"

namespace llmwb::ui {

struct GenerationRequest {
  // Chosen by the GUI so that a view can recognise its own outputs before the engine has
  // assigned a request id (the worker maps tickets to engine ids).
  quint64 ticket = 0;
  std::string prompt;  // a text prompt; the engine adds BOS (the rendered text, for a chat)
  // Token ids instead of a text prompt when not empty (a fork from the token inspector: the
  // context of a step plus the candidate chosen there).
  std::vector<int> prompt_ids;
  SamplingParams params;
  // A chat turn: the conversation as the chat template rendered it. The worker sends it through
  // add_chat_request (llmwb/chat_prompt.h): control tokens only from the template, message
  // contents as plain text, the format's end-of-turn strings as stop strings.
  std::optional<RenderedChat> chat;
  ChatFormat chat_format = ChatFormat::Completion;
};

}  // namespace llmwb::ui

Q_DECLARE_METATYPE(llmwb::ui::GenerationRequest)

namespace llmwb::ui {

// A process-wide unique ticket for a new GenerationRequest (thread-safe).
quint64 next_ticket();

}  // namespace llmwb::ui
