#include "message_renderer.h"

#include <QRegularExpression>
#include <QTextCharFormat>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextDocument>
#include <QTextDocumentFragment>
#include <QTextList>
#include <QTextTable>
#include <QTextFrame>
#include <QTextLayout>

#include <algorithm>

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
  const QString raw = close < 0 || close < from ? reply.mid(from) : reply.mid(from, close - from);
  p.thinking = raw.trimmed();
  qsizetype lead = 0;
  while (lead < raw.size() && raw[lead].isSpace()) ++lead;
  p.thinking_at = from + (p.thinking.isEmpty() ? 0 : lead);
  if (close < 0 || close < from) {
    p.thinking_open = true;
    return p;
  }
  p.answer = reply.mid(close + 8);
  p.answer_at = close + 8;
  while (p.answer.startsWith('\n')) {
    p.answer.remove(0, 1);
    ++p.answer_at;
  }
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
                                  bool expanded, bool streaming, Marks marks) {
  const ReplyParts parts = split_thinking(reply);
  write_thinking(c, parts, message, thinking_tokens, expanded, streaming, marks);
  if (parts.has_thinking && streaming && parts.thinking_open) return;
  write_markdown(c, parts.answer + (streaming ? QStringLiteral("▍") : QString()), marks.shifted(parts.answer_at));
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
                                     bool expanded, bool streaming, Marks marks) const {
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
      insert_marked(c, parts.thinking, italic, marks.shifted(parts.thinking_at));
      if (streaming && parts.thinking_open) c.insertText(QStringLiteral("▍"), italic);
    }
  }
}

void MessageRenderer::write_markdown(QTextCursor& c, const QString& markdown, Marks marks) {
  static const QRegularExpression fence(QStringLiteral("^ {0,3}(`{3,}|~{3,})\\s*([^`\\s]*)"));
  const QStringList lines = markdown.split('\n');
  QString text;
  qsizetype text_at = 0;  // where `text` begins in `markdown`
  qsizetype line_at = 0;  // where line i begins
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
    mark_draft_text(c.document(), start, c.position(), text, marks.shifted(text_at));
    text.clear();
  };
  for (qsizetype i = 0; i < lines.size(); line_at += lines[i].size() + 1, ++i) {
    const QRegularExpressionMatch open = fence.match(lines[i]);
    if (!open.hasMatch()) {
      if (text.isEmpty()) text_at = line_at;
      text += lines[i] + '\n';
      continue;
    }
    flush_text();
    const QString marker = open.captured(1);
    QStringList code;
    const qsizetype code_at = line_at + lines[i].size() + 1;
    qsizetype j = i + 1;
    for (; j < lines.size(); ++j) {
      const QString t = lines[j].trimmed();
      if (t.startsWith(marker) && t.count(marker[0]) == t.size()) break;
      code << lines[j];
    }
    write_code(c, open.captured(2), code.join('\n'), marks.shifted(code_at));
    // Past the closing fence (or the end: a block still streaming).
    for (; i < j && i + 1 < lines.size(); ++i) line_at += lines[i].size() + 1;
  }
  flush_text();
}

QTextCharFormat MessageRenderer::draft_format() const {
  QTextCharFormat mark;
  mark.setBackground(style_.draft_background);
  mark.setProperty(kDraftProperty, true);
  return mark;
}

void MessageRenderer::insert_marked(QTextCursor& c, const QString& text, const QTextCharFormat& format,
                                    Marks marks) const {
  const int start = c.position();
  c.insertText(text, format);
  mark_draft_text(c.document(), start, c.position(), text, marks);
}

void MessageRenderer::mark_draft_text(QTextDocument* doc, int from, int to, const QString& source,
                                      Marks marks) const {
  if (!marks.spans || from >= to) return;
  const TextSpans& spans = *marks.spans;
  // The first span that ends inside or after `source`.
  auto span = std::lower_bound(spans.begin(), spans.end(), marks.at + 1,
                               [](const std::pair<int, int>& s, qsizetype at) { return s.second < at; });
  const QTextCharFormat mark = draft_format();
  // Markup the renderer drops (emphasis, link targets, list markers) is skipped over; a rendered
  // character not found this far ahead (a list number, the streaming cursor) is left unmarked.
  constexpr qsizetype kLookahead = 512;
  qsizetype next = 0;  // the source character the next rendered one is looked for from
  // The marks are the block layouts' additional formats (what QSyntaxHighlighter uses): drawn
  // over the text's own formats without splitting the document's fragments, so that a block
  // costs no more to lay out for them, and copying or exporting the text takes none of them.
  QList<QTextLayout::FormatRange> ranges;
  int block_at = 0;
  int run = -1;  // where the marked run being collected began
  auto end_run = [&](int at) {
    if (run < 0) return;
    ranges.append({run - block_at, at - run, mark});
    run = -1;
  };
  // The blocks were just written: a block the renderer reused (an empty one left by a cut) may
  // still have the marks of what was written there before, and loses them.
  for (QTextBlock b = doc->findBlock(from); b.isValid() && b.position() < to; b = b.next()) {
    const QString t = b.text();
    block_at = b.position();
    for (int k = std::max(0, from - block_at); k < t.size() && block_at + k < to && span != spans.end(); ++k) {
      const QChar ch = t[k] == QChar::LineSeparator ? QChar('\n') : t[k];
      const qsizetype limit = std::min(source.size(), next + kLookahead);
      qsizetype found = next;
      while (found < limit && source[found] != ch) ++found;
      bool marked = false;
      if (found < limit) {
        next = found + 1;
        const qsizetype at = marks.at + found;
        while (span != spans.end() && span->second <= at) ++span;
        marked = span != spans.end() && span->first <= at;
      }
      if (marked && run < 0) run = block_at + k;
      else if (!marked) end_run(block_at + k);
    }
    end_run(std::min(block_at + int(t.size()), to));
    QTextLayout* layout = b.layout();
    if (ranges.isEmpty() && layout->formats().isEmpty()) continue;
    layout->setFormats(ranges);  // lays the block out again
    ranges.clear();
  }
}

void MessageRenderer::write_code(QTextCursor& c, const QString& language, const QString& code, Marks marks) {
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
  insert_marked(c, code, mono, marks);
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
