// conversation.h — one chat: its system prompt, chat format and messages as a tree of
// branches (regenerated replies and edited user messages fork; the active path is what is
// shown and sent); JSON and Markdown.
#pragma once

#include <QDateTime>
#include <QJsonObject>
#include <QString>

#include <utility>
#include <vector>

#include "llmwb/chat_template.h"
#include "message_stats.h"

namespace llmwb::ui {

struct Conversation {
  // One message of the tree. Siblings (same parent) are alternatives: the branches.
  struct Node {
    ChatMessage message;
    MessageStats stats;
    int parent = -1;        // index in `nodes`; -1: a first message
    int active_child = -1;  // the branch shown below this message, -1: none yet
  };

  QString id;                 // file name stem under the store; a UUID
  QString title;
  QString system_prompt;
  QString format = "auto";    // "auto" (from the model) or a chat_format_name
  // The active path's messages ("user" / "assistant" turns, in order). Change them through
  // append() / truncate(); a message pushed here directly becomes a node when saved.
  std::vector<ChatMessage> messages;
  std::vector<Node> nodes;    // every message of every branch, parents before children
  std::vector<int> path;      // the node of each message in `messages`
  QDateTime created, updated;

  static Conversation make_new();
  // The template's messages: the system prompt first when there is one.
  std::vector<ChatMessage> template_messages() const;
  // The first user message, shortened: a title a person recognises.
  QString derived_title() const;

  // Adds a message after the active path's end (a new branch when that message has children).
  void append(const ChatMessage& m, const MessageStats& stats = {});
  // Keeps the first `n` messages of the active path; the rest stay in the tree as a branch.
  void truncate(size_t n);
  // Extends the active path along each message's active branch (after a failed regenerate).
  void extend();
  // Message `i`'s place among its alternatives: {index from 0, count}.
  std::pair<int, int> branch_at(size_t i) const;
  // Shows alternative `index` at message `i` (and the branches below it as last shown).
  void select_branch(size_t i, int index);
  const MessageStats& stats_at(size_t i) const;

  QJsonObject to_json() const;
  // Throws llmwb::Error(where, what) for a malformed document. Version 1 files (a list of
  // messages, no branches) load as one branch. A node's stats may hold "draft_spans" (the
  // accepted draft tokens' text; optional, so that files without it load as before).
  static Conversation from_json(const QJsonObject& o, const QString& where);
  // The active path, each reply with its footer.
  QString to_markdown() const;

  bool operator==(const Conversation& o) const;

 private:
  std::vector<int> siblings_of(int node) const;
  void sync_messages();
  // Nodes for messages pushed onto `messages` directly.
  void adopt_loose_messages();
};

}  // namespace llmwb::ui
