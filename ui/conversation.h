// conversation.h — one chat: its system prompt, chat format and messages; JSON and Markdown.
#pragma once

#include <QDateTime>
#include <QJsonObject>
#include <QString>

#include <vector>

#include "llmwb/chat_template.h"

namespace llmwb::ui {

struct Conversation {
  QString id;                 // file name stem under the store; a UUID
  QString title;
  QString system_prompt;
  QString format = "auto";    // "auto" (from the model) or a chat_format_name
  std::vector<ChatMessage> messages;  // "user" / "assistant" turns, in order
  QDateTime created, updated;

  static Conversation make_new();
  // The template's messages: the system prompt first when there is one.
  std::vector<ChatMessage> template_messages() const;
  // The first user message, shortened: a title a person recognises.
  QString derived_title() const;

  QJsonObject to_json() const;
  // Throws llmwb::Error(where, what) for a malformed document.
  static Conversation from_json(const QJsonObject& o, const QString& where);
  QString to_markdown() const;

  bool operator==(const Conversation& o) const;
};

}  // namespace llmwb::ui
