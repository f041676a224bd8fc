#include "message_renderer.h"

#include <QRegularExpression>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextDocument>
#include <QTextDocumentFragment>
#include <QTextList>
#include <QTextTable>
#include <QTextFrame>

namespace llmwb::ui {

ReplyParts split_thinking(const QString& reply) {
  ReplyParts p;
  const qsizetype start = reply.indexOf(QStringLiteral("<think>"));
  const qsizetype close = reply.indexOf(QStringLiteral("</think>"));
  const bool opens = start >= 0 && reply.left(start).trimmed().isEmpty();
  if (!opens && close < 0) {
    p.answer = reply;
    return p;
  }
  p.has_thinking = true;
  const qsizetype from = opens ? start + 7 : 0;  // the prompt may already hold "<think>"
  if (close < 0 || close < from) {
    p.thinking_open = true;
    p.thinking = reply.mid(from).trimmed();
    return p;
  }
  p.thinking = reply.mid(from, close - from).trimmed();
  p.answer = reply.mid(close + 8);
  while (p.answer.startsWith('\n')) p.answer.remove(0, 1);
  return p;
}

namespace {

// Starts a block with `format`, reusing the current one when it is empty (the document's
// first block, or the one after a code frame).
void new_block(QTextCursor& c, const QTextBlockFormat& format, const QTextCharFormat& chars = {}) {
  if (c.block().length() <= 1 && c.position() == c.block().position()) {
    c.setBlockFormat(format);
    c.setBlockCharFormat(chars);
    c.setCharFormat(chars);
  } else {
    c.insertBlock(format, chars);
  }
}

QTextCharFormat link_format(const QColor& color, const QString& href) {
  QTextCharFormat f;
  f.setAnchor(true);
  f.setAnchorHref(href);
  f.setForeground(color);
  f.setFontUnderline(false);
  return f;
}

// Markdown ends a line at a single newline only inside code; a chat reply means its newlines.
QString hard_line_breaks(const QString& text) {
  static const QRegularExpression single(QStringLiteral("([^\\n])\\n(?=[^\\n])"));
  QString out = text;
  return out.replace(single, QStringLiteral("\\1  \n"));
}

}  // namespace

void MessageRenderer::write_header(QTextCursor& c, const QString& who, int message, std::pair<int, int> branch,
                                   bool user, bool actions) const {
  QTextBlockFormat b;
  b.setTopMargin(message == 0 ? 2 : 12);
  QTextCharFormat bold;
  bold.setFontWeight(QFont::Bold);
  bold.setForeground(style_.text);
  new_block(c, b, bold);
  c.insertText(who, bold);
  QTextCharFormat muted;
  muted.setForeground(style_.muted);
  if (branch.second > 1) {
    c.insertText(QStringLiteral("   "), muted);
    const QString base = QString("%1:%2/").arg(chat_links::kBranch).arg(message);
    if (actions && branch.first > 0) c.insertText(QStringLiteral("‹"), link_format(style_.link, base + "-1"));
    else c.insertText(QStringLiteral("‹"), muted);
    c.insertText(QString(" %1/%2 ").arg(branch.first + 1).arg(branch.second), muted);
    if (actions && branch.first + 1 < branch.second) c.insertText(QStringLiteral("›"), link_format(style_.link, base + "1"));
    else c.insertText(QStringLiteral("›"), muted);
  }
  if (user && actions) {
    c.insertText(QStringLiteral("   "), muted);
    c.insertText(QObject::tr("Edit"), link_format(style_.link, QString("%1:%2").arg(chat_links::kEdit).arg(message)));
  }
}

void MessageRenderer::write_user_text(QTextCursor& c, const QString& text) const {
  QTextBlockFormat b;
  b.setBackground(style_.user_background);
  b.setLeftMargin(4);
  b.setTopMargin(2);
  QTextCharFormat plain;
  plain.setForeground(style_.text);
  new_block(c, b, plain);
  c.insertText(text, plain);  // each newline a block of the same format
}

void MessageRenderer::write_reply(QTextCursor& c, const QString& reply, int message, int thinking_tokens,
                                  bool expanded, bool streaming) {
  const ReplyParts parts = split_thinking(reply);
  write_thinking(c, parts, message, thinking_tokens, expanded, streaming);
  if (parts.has_thinking && streaming && parts.thinking_open) return;
  write_markdown(c, parts.answer + (streaming ? QStringLiteral("▍") : QString()));
}

qsizetype MessageRenderer::stable_prefix(const QString& markdown, qsizetype from) {
  static const QRegularExpression fence(QStringLiteral("^ {0,3}(`{3,}|~{3,})"));
  qsizetype cut = from;
  bool in_code = false;
  bool blank_before = false;
  qsizetype line_start = from;
  while (line_start < markdown.size()) {
    const qsizetype end = markdown.indexOf('\n', line_start);
    if (end < 0) break;  // the last line may still grow
    const QString line = markdown.mid(line_start, end - line_start);
    if (fence.match(line).hasMatch()) in_code = !in_code;
    const bool blank = line.trimmed().isEmpty();
    // A block ends at a blank line; the next one starts at a line that is not blank.
    if (!in_code && blank_before && !blank) cut = line_start;
    blank_before = blank && !in_code;
    line_start = end + 1;
  }
  return cut;
}

void MessageRenderer::write_thinking(QTextCursor& c, const ReplyParts& parts, int message, int thinking_tokens,
                                     bool expanded, bool streaming) const {
  if (parts.has_thinking) {
    QTextBlockFormat b;
    b.setTopMargin(4);
    QTextCharFormat muted;
    muted.setForeground(style_.muted);
    new_block(c, b, muted);
    const bool show = expanded || (streaming && parts.thinking_open);
    c.insertText(show ? QObject::tr("▾ Thinking") : QObject::tr("▸ Thinking"),
                 link_format(style_.link, QString("%1:%2").arg(chat_links::kThink).arg(message)));
    QString count = (thinking_tokens == 1 ? QObject::tr(" · 1 token") : QObject::tr(" · %1 tokens").arg(thinking_tokens));
    if (streaming && parts.thinking_open) count += QStringLiteral(" …");
    c.insertText(count, muted);
    if (show && !parts.thinking.isEmpty()) {
      QTextBlockFormat body;
      body.setLeftMargin(14);
      QTextCharFormat italic = muted;
      italic.setFontItalic(true);
      new_block(c, body, italic);
      c.insertText(parts.thinking + (streaming && parts.thinking_open ? QStringLiteral("▍") : QString()), italic);
    }
  }
}

void MessageRenderer::write_markdown(QTextCursor& c, const QString& markdown) {
  static const QRegularExpression fence(QStringLiteral("^ {0,3}(`{3,}|~{3,})\\s*([^`\\s]*)"));
  const QStringList lines = markdown.split('\n');
  QString text;
  auto flush_text = [&] {
    if (text.trimmed().isEmpty()) {
      text.clear();
      return;
    }
    QTextCharFormat plain;
    plain.setForeground(style_.text);
    new_block(c, QTextBlockFormat(), plain);
    const int start = c.position();
    QTextDocument parsed;
    parsed.setDefaultFont(style_.base);
    parsed.setMarkdown(hard_line_breaks(text), QTextDocument::MarkdownDialectGitHub);
    c.insertFragment(QTextDocumentFragment(&parsed));
    // The fragment's first block merges into the block it is inserted at and takes its format:
    // give it back its own (a heading's level, a list item's list).
    const QTextBlock source = parsed.firstBlock();
    const QTextBlock first = c.document()->findBlock(start);
    if (source.isValid() && first.isValid() && first.position() == start) {
      QTextCursor at(first);
      if (const QTextList* list = source.textList()) {
        const QTextBlock next = first.next();
        if (next.isValid() && next.textList() && next.textList()->format().style() == list->format().style())
          next.textList()->add(first);
        else
          at.createList(list->format());
      } else if (!first.textList() && !QTextCursor(first).currentTable()) {
        QTextBlockFormat f = source.blockFormat();
        f.setObjectIndex(-1);
        at.setBlockFormat(f);
      }
    }
    // Tables in quiet lines rather than the default's raised double border.
    for (QTextFrame* f : c.document()->rootFrame()->childFrames()) {
      auto* table = qobject_cast<QTextTable*>(f);
      if (!table || table->firstPosition() < start) continue;
      QTextTableFormat tf = table->format();
      tf.setBorder(1);
      tf.setBorderBrush(style_.code_border);
      tf.setBorderStyle(QTextFrameFormat::BorderStyle_Solid);
      tf.setBorderCollapse(true);
      tf.setCellSpacing(0);
      tf.setCellPadding(4);
      tf.setTopMargin(4);
      tf.setBottomMargin(4);
      table->setFormat(tf);
    }
    text.clear();
  };
  for (qsizetype i = 0; i < lines.size(); ++i) {
    const QRegularExpressionMatch open = fence.match(lines[i]);
    if (!open.hasMatch()) {
      text += lines[i] + '\n';
      continue;
    }
    flush_text();
    const QString marker = open.captured(1);
    QStringList code;
    qsizetype j = i + 1;
    for (; j < lines.size(); ++j) {
      const QString t = lines[j].trimmed();
      if (t.startsWith(marker) && t.count(marker[0]) == t.size()) break;
      code << lines[j];
    }
    write_code(c, open.captured(2), code.join('\n'));
    i = j;  // past the closing fence (or the end: a block still streaming)
  }
  flush_text();
}

void MessageRenderer::write_code(QTextCursor& c, const QString& language, const QString& code) {
  QTextBlockFormat label;
  label.setTopMargin(6);
  QTextCharFormat muted;
  muted.setForeground(style_.muted);
  QFont small = style_.base;
  small.setPointSizeF(small.pointSizeF() * 0.9);
  muted.setFont(small);
  new_block(c, label, muted);
  if (!language.isEmpty()) c.insertText(language + QStringLiteral("   "), muted);
  QTextCharFormat link = link_format(style_.link, QString("%1:%2").arg(chat_links::kCopy).arg(code_.size()));
  link.setFont(small);
  c.insertText(QObject::tr("Copy"), link);
  code_ << code;

  QTextFrameFormat frame;
  frame.setBackground(style_.code_background);
  frame.setBorder(1);
  frame.setBorderBrush(style_.code_border);
  frame.setBorderStyle(QTextFrameFormat::BorderStyle_Solid);
  frame.setPadding(6);
  frame.setTopMargin(2);
  frame.setBottomMargin(4);
  c.movePosition(QTextCursor::End);
  c.insertFrame(frame);
  QTextCharFormat mono;
  mono.setFont(style_.mono);
  mono.setFontFixedPitch(true);
  mono.setForeground(style_.text);
  c.setBlockCharFormat(mono);
  c.insertText(code, mono);
  c.movePosition(QTextCursor::End);  // out of the frame, into the block after it
}

void MessageRenderer::write_footer(QTextCursor& c, const QString& footer) const {
  if (footer.isEmpty()) return;
  QTextBlockFormat b;
  b.setTopMargin(2);
  QTextCharFormat muted;
  muted.setForeground(style_.muted);
  QFont small = style_.base;
  small.setPointSizeF(small.pointSizeF() * 0.85);
  muted.setFont(small);
  new_block(c, b, muted);
  c.insertText(footer, muted);
}

void MessageRenderer::write_note(QTextCursor& c, const QString& text) const {
  QTextCharFormat italic;
  italic.setForeground(style_.muted);
  italic.setFontItalic(true);
  new_block(c, QTextBlockFormat(), italic);
  c.insertText(text, italic);
}

}  // namespace llmwb::ui
