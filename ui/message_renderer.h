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

class QTextCursor;

namespace llmwb::ui {

// A reply split at its reasoning: "<think>x</think>y" -> thinking "x", answer "y".
struct ReplyParts {
  bool has_thinking = false;
  bool thinking_open = false;  // "</think>" not (yet) generated
  QString thinking;
  QString answer;
};
ReplyParts split_thinking(const QString& reply);

// Links the transcript answers (QTextBrowser::anchorClicked): scheme and payload.
namespace chat_links {
inline constexpr char kCopy[] = "llmwb-copy";      // llmwb-copy:N    code block N
inline constexpr char kBranch[] = "llmwb-branch";  // llmwb-branch:I/-1 or I/1
inline constexpr char kThink[] = "llmwb-think";    // llmwb-think:I   toggle message I's thinking
inline constexpr char kEdit[] = "llmwb-edit";      // llmwb-edit:I    edit user message I (forks)
}  // namespace chat_links

class MessageRenderer {
 public:
  struct Style {
    QColor text, muted, code_background, code_border, user_background, link;
    QFont base, mono;
  };
  explicit MessageRenderer(Style style) : style_(std::move(style)) {}

  // "You" / "Assistant" with "‹ 2/3 ›" when the message has alternatives (branch = index,
  // count) and "Edit" on a user message.
  void write_header(QTextCursor& c, const QString& who, int message, std::pair<int, int> branch, bool user,
                    bool actions) const;
  // A user's message: plain text, as typed, on the user background.
  void write_user_text(QTextCursor& c, const QString& text) const;
  // A reply: its thinking block (collapsed unless `expanded`) and its answer as Markdown.
  void write_reply(QTextCursor& c, const QString& reply, int message, int thinking_tokens, bool expanded,
                   bool streaming);
  // The reply's thinking block alone (nothing when it has none).
  void write_thinking(QTextCursor& c, const ReplyParts& parts, int message, int thinking_tokens, bool expanded,
                      bool streaming) const;
  void write_footer(QTextCursor& c, const QString& footer) const;
  void write_note(QTextCursor& c, const QString& text) const;

  // Markdown with fenced code blocks set apart (each gets a Copy link: llmwb-copy:N).
  void write_markdown(QTextCursor& c, const QString& markdown);

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
  void write_code(QTextCursor& c, const QString& language, const QString& code);

  Style style_;
  QStringList code_;
};

}  // namespace llmwb::ui
