// token_count_request.h — the chat's question to the engine thread for its context meter: how
// many prompt tokens each variant of the conversation takes (the whole conversation with the
// draft message, then with the oldest turns left out), counted as a request would be
// (chat_prompt_ids: the engine's tokenizer, control tokens only from the template).
#pragma once

#include <QList>
#include <QMetaType>

#include <vector>

#include "llmwb/chat_template.h"

namespace llmwb::ui {

struct TokenCountRequest {
  quint64 ticket = 0;
  std::vector<RenderedChat> variants;
};

}  // namespace llmwb::ui

Q_DECLARE_METATYPE(llmwb::ui::TokenCountRequest)
