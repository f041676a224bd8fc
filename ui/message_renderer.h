// message_renderer.h — writes chat messages into the transcript's QTextDocument: Markdown
// (headings, lists, tables, links, inline code) through Qt's Markdown reader, fenced code as
// monospace blocks with a "Copy" link, a reply's <think>…</think> as a collapsible block, the
// header with branch navigation and the quiet footer.
//
// Everything is appended at the cursor, so the chat can re-write the streaming reply alone:
// remove from where it began to the end and write it again; the messages above keep their
// layout (QTextDocument lays out only changed blocks).
#pragma once

#include <QColor>
#include <QFont>
#include <QString>
#include <QStringList>

#include "message_stats.h"

class QTextCharFormat;
class QTextCursor;
class QTextDocument;

namespace llmwb::ui {

// A reply split at its reasoning: "<think>x</think>y" -> thinking "x", answer "y".
struct ReplyParts {
  bool has_thinking = false;
  bool thinking_open = false;  // "</think>" not (yet) generated
  QString thinking;
  QString answer;
  qsizetype thinking_at = 0, answer_at = 0;  // where they begin in the reply
};
ReplyParts split_thinking(const QString& reply);

// Links the transcript answers (QTextBrowser::anchorClicked): scheme and payload.
namespace chat_links {
inline constexpr char kCopy[] = "llmwb-copy";      // llmwb-copy:N    code block N
inline constexpr char kBranch[] = "llmwb-branch";  // llmwb-branch:I/-1 or I/1
inline constexpr char kThink[] = "llmwb-think";    // llmwb-think:I   toggle message I's thinking
inline constexpr char kEdit[] = "llmwb-edit";      // llmwb-edit:I    edit user message I (forks)
}  // namespace chat_links

// The accepted draft tokens' text of what is written: spans of the reply's text (null: none
// marked), and where the text being written begins in the reply.
struct DraftMarks {
  const TextSpans* spans = nullptr;
  qsizetype at = 0;
  DraftMarks shifted(qsizetype by) const { return {spans, at + by}; }
  bool any() const { return spans && !spans->empty(); }
};

class MessageRenderer {
 public:
  struct Style {
    QColor text, muted, code_background, code_border, user_background, link;
    QColor draft_background;  // behind the text of accepted draft tokens
    QFont base, mono;
  };
  // A mark is a block layout's additional format (QTextLayout::formats()) with this property
  // (true) and the draft background; the document's own character formats stay as written.
  static constexpr int kDraftProperty = 0x100000 + 21;  // QTextFormat::UserProperty + 21
  using Marks = DraftMarks;
  explicit MessageRenderer(Style style) : style_(std::move(style)) {}

  // "You" / "Assistant" with "‹ 2/3 ›" when the message has alternatives (branch = index,
  // count) and "Edit" on a user message.
  void write_header(QTextCursor& c, const QString& who, int message, std::pair<int, int> branch, bool user,
                    bool actions) const;
  // A user's message: plain text, as typed, on the user background.
  void write_user_text(QTextCursor& c, const QString& text) const;
  // A reply: its thinking block (collapsed unless `expanded`) and its answer as Markdown.
  // `marks`: the accepted draft tokens' text, marked wherever it shows (answer, code, thinking).
  void write_reply(QTextCursor& c, const QString& reply, int message, int thinking_tokens, bool expanded,
                   bool streaming, Marks marks = {});
  // The reply's thinking block alone (nothing when it has none).
  void write_thinking(QTextCursor& c, const ReplyParts& parts, int message, int thinking_tokens, bool expanded,
                      bool streaming, Marks marks = {}) const;
  void write_footer(QTextCursor& c, const QString& footer) const;
  void write_note(QTextCursor& c, const QString& text) const;

  // Markdown with fenced code blocks set apart (each gets a Copy link: llmwb-copy:N).
  // `marks.at`: where `markdown` begins in the reply the spans refer to.
  void write_markdown(QTextCursor& c, const QString& markdown, Marks marks = {});

  // Marks the document's characters in [from, to) that show characters of `source` inside
  // `marks` (a reply's spans; `source` begins at marks.at in that reply). The document's text
  // is `source` rendered (Markdown removes markup, never reorders): each character is matched
  // to the next equal character of `source`, so the cost is linear in what was written.
  void mark_draft_text(QTextDocument* doc, int from, int to, const QString& source, Marks marks) const;

  // Where Markdown streamed so far can be cut so that the part before it renders the same
  // whatever follows: after the last blank line at or after `from` that is outside fenced
  // code; `from` when there is none. (A streaming reply keeps what is before the cut and
  // rewrites only the rest.)
  static qsizetype stable_prefix(const QString& markdown, qsizetype from);

  // The code blocks written so far, by the N of their Copy link.
  const QStringList& code_blocks() const { return code_; }
  // Forgets code blocks from `n` on (before the streaming reply is written again).
  void truncate_code_blocks(qsizetype n) { code_.resize(std::min(n, code_.size())); }
  void clear() { code_.clear(); }

 private:
  void write_code(QTextCursor& c, const QString& language, const QString& code, Marks marks);
  // The format drawn over marked text.
  QTextCharFormat draft_format() const;
  // Inserts plain `text` in `format` and marks its parts inside `marks`.
  void insert_marked(QTextCursor& c, const QString& text, const QTextCharFormat& format, Marks marks) const;

  Style style_;
  QStringList code_;
};

}  // namespace llmwb::ui
