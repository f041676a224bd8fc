// Speculative decoding in the Chat view: the text of accepted draft tokens is marked in the
// transcript (exactly those tokens' text, compared with the engine's per-token flags), while it
// streams, in code and thinking blocks, behind the "Show accepted draft tokens" toggle (saved
// in the settings); the marks are saved with the conversation and come back with it; older
// files load as before and a malformed span list is refused naming the field.
#include <QCheckBox>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QPlainTextEdit>
#include <QTest>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextCursor>
#include <QTextDocument>
#include <QTextLayout>

#include "app_settings.h"
#include "chat_view.h"
#include "llmwb/engine.h"
#include "llmwb/errors.h"
#include "message_renderer.h"
#include "ui_test_support.h"

using namespace llmwb;

namespace {

// Which characters of block `b` are marked (its layout's additional formats), and the colour.
std::vector<bool> marks_of(const QTextBlock& b, QColor* color = nullptr) {
  std::vector<bool> m(size_t(std::max(0, b.length())), false);
  for (const QTextLayout::FormatRange& r : b.layout()->formats()) {
    if (!r.format.property(ui::MessageRenderer::kDraftProperty).toBool()) continue;
    if (color) *color = r.format.background().color();
    for (int i = r.start; i < r.start + r.length && i < int(m.size()); ++i) m[size_t(i)] = true;
  }
  return m;
}

// The non-space characters of `text` and, one per character, '^' where it is marked, '.' where not.
struct Masked {
  QString chars, mask;
  void add(QChar c, bool marked) {
    if (c.isSpace() || c == QChar::LineSeparator || c == QChar::ParagraphSeparator) return;
    chars += c;
    mask += marked ? '^' : '.';
  }
  int marked() const { return int(mask.count('^')); }
};

// The document's characters in blocks [first, last] with their marks.
Masked masked_blocks(QTextBlock first, const QTextBlock& last) {
  Masked m;
  for (QTextBlock b = first; b.isValid(); b = b.next()) {
    const std::vector<bool> marked = marks_of(b);
    const QString t = b.text();
    for (qsizetype i = 0; i < t.size(); ++i) m.add(t[i], marked[size_t(i)]);
    if (b == last) break;
  }
  return m;
}

// The last reply in the transcript: the blocks after the last "Assistant" header, up to its footer.
Masked last_reply(const QTextDocument* doc) {
  QTextBlock header;
  for (QTextBlock b = doc->begin(); b.isValid(); b = b.next())
    if (b.text().startsWith("Assistant")) header = b;
  if (!header.isValid()) return {};
  QTextBlock last = header.next();
  for (QTextBlock b = header.next(); b.isValid() && !b.text().contains(" tokens · "); b = b.next()) last = b;
  return masked_blocks(header.next(), last);
}

int marked_chars(const QTextDocument* doc) {
  int n = 0;
  for (QTextBlock b = doc->begin(); b.isValid(); b = b.next()) {
    const std::vector<bool> marked = marks_of(b);
    n += int(std::count(marked.begin(), marked.end(), true));
  }
  return n;
}

ui::MessageRenderer::Style test_style() {
  ui::MessageRenderer::Style style;
  style.draft_background = QColor("#cfe2f7");
  return style;
}

// The marked runs of a document ("|" between runs).
QString marked_runs(const QTextDocument& doc) {
  QStringList runs;
  QString run;
  auto end_run = [&] {
    if (!run.isEmpty()) runs << run;
    run.clear();
  };
  for (QTextBlock b = doc.begin(); b.isValid(); b = b.next()) {
    const std::vector<bool> marked = marks_of(b);
    const QString t = b.text();
    for (qsizetype i = 0; i < t.size(); ++i) {
      if (marked[size_t(i)]) run += t[i];
      else end_run();
    }
    end_run();  // a run ends with its block
  }
  return runs.join('|');
}

// What a renderer writes for `reply` with `spans` marked, as marked runs.
QString rendered_marks(const QString& reply, const ui::TextSpans& spans, bool expanded) {
  QTextDocument doc;
  QTextCursor c(&doc);
  ui::MessageRenderer r(test_style());
  r.write_reply(c, reply, 0, 3, expanded, false, {&spans, 0});
  return marked_runs(doc);
}

}  // namespace

class TestChatDraftMarks : public QObject {
  Q_OBJECT

 private:
  std::unique_ptr<gui::Workbench> bench_;
  std::unique_ptr<Engine> decoder_;  // the model's tokenizer, for the expected text
  QString store_dir_;
  std::vector<int> tokens_;
  std::vector<uint8_t> from_draft_;
  ui::ChatView* chat() { return bench_->window().chat_view(); }
  const QTextDocument* transcript() { return chat()->transcript()->document(); }

  // The reply's non-space characters marked where the engine said a token was an accepted
  // guess: each token's text is the growth of the decoded prefix it ends.
  Masked expected_marks() {
    Masked m;
    std::string before;
    std::vector<int> prefix;
    for (size_t i = 0; i < tokens_.size(); ++i) {
      prefix.push_back(tokens_[i]);
      const std::string now = decoder_->decode(prefix);
      if (now.compare(0, before.size(), before) != 0) {
        qWarning("decoded prefixes do not extend each other at token %zu", i);
        return {};
      }
      for (QChar c : QString::fromStdString(now.substr(before.size()))) m.add(c, from_draft_[i]);
      before = now;
    }
    return m;
  }

 private slots:
  void initTestCase() {
    uitest::isolate_user_data();
    bench_ = uitest::start_application(ui::MainWindow::View::Chat);
    ui::AppSettings s = bench_->window().settings();
    s.speculative = "self-int4";
    // A fixed k: with the adaptive one this tiny model's INT4 draft, whose pass costs more than
    // the F32 target's, is switched off by cost after its first guesses (docs/SPECULATIVE.md).
    s.spec_k = 4;
    bench_->window().set_settings(s);
    store_dir_ = uitest::scratch_dir("draft_marks");
    QVERIFY(uitest::open_chat(*bench_, store_dir_, 64));
    EngineConfig config;
    config.model = uitest::stories_gguf().toStdString();
    config.threads = 1;
    decoder_ = std::make_unique<Engine>(config);
    connect(&bench_->mailbox(), &gui::FrameMailbox::tokens, this, [this](const ui::TokenDelta& d) {
      tokens_.insert(tokens_.end(), d.token_ids.begin(), d.token_ids.end());
      from_draft_.insert(from_draft_.end(), d.token_from_draft.begin(), d.token_from_draft.end());
    });
  }

  void cleanupTestCase() { bench_.reset(); }

  void marking_is_on_by_default() {
    QVERIFY(chat()->draft_marks_box());
    QVERIFY(chat()->draft_marks_box()->isChecked());
    QVERIFY(ui::AppSettings::show_draft_tokens());
  }

  void a_reply_marks_exactly_the_text_of_the_accepted_draft_tokens() {
    chat()->new_chat();
    tokens_.clear();
    from_draft_.clear();
    QVERIFY(uitest::send_chat(chat(), "Once upon a time"));
    QCOMPARE(int(from_draft_.size()), int(tokens_.size()));
    const int accepted = int(std::count(from_draft_.begin(), from_draft_.end(), 1));
    QVERIFY2(accepted > 10, qPrintable(QString("only %1 accepted guesses of %2 tokens").arg(accepted).arg(tokens_.size())));
    const ui::MessageStats& stats = chat()->conversation().stats_at(1);
    QCOMPARE(stats.draft_tokens, accepted);
    QVERIFY(stats.drafted_tokens >= accepted);
    // The footer: the count, the rate and the mean acceptance length.
    const QString footer = stats.footer();
    QVERIFY2(footer.contains(QString("%1 of %2 draft tokens accepted (%3%), ")
                                 .arg(accepted)
                                 .arg(stats.drafted_tokens)
                                 .arg(100.0 * accepted / stats.drafted_tokens, 0, 'f', 0)) &&
                 footer.contains(QString("%1 per verification").arg(stats.mean_acceptance_length, 0, 'f', 2)),
             qPrintable(footer));
    QVERIFY(stats.mean_acceptance_length > 1.0);
    QVERIFY2(chat()->transcript_text().contains(footer), qPrintable(chat()->transcript_text()));

    const QString reply = QString::fromStdString(chat()->conversation().messages[1].content);
    Masked expected = expected_marks();
    QVERIFY(!expected.chars.isEmpty());
    // The engine's text may run past a stop string the reply was cut at: compare the reply's part.
    Masked saved;
    for (qsizetype i = 0; i < reply.size(); ++i) {
      bool in = false;
      for (const auto& [start, end] : stats.draft_spans) in = in || (i >= start && i < end);
      saved.add(reply[i], in);
    }
    QVERIFY2(expected.chars.startsWith(saved.chars), qPrintable(expected.chars + "\n" + saved.chars));
    expected.chars.truncate(saved.chars.size());
    expected.mask.truncate(saved.chars.size());
    // The spans saved with the reply, and the marks in the transcript, are the accepted tokens'.
    QCOMPARE(saved.mask, expected.mask);
    const Masked shown = last_reply(transcript());
    QCOMPARE(shown.chars, expected.chars);
    QCOMPARE(shown.mask, expected.mask);
    QCOMPARE(shown.marked(), expected.marked());
    // A tinted background, not the page's; the document's own formats carry no mark (copying
    // and exporting the text take none).
    for (QTextBlock b = transcript()->begin(); b.isValid(); b = b.next()) {
      QColor bg;
      marks_of(b, &bg);
      if (bg.isValid()) {
        QVERIFY(bg != chat()->transcript()->palette().color(QPalette::Base));
        QVERIFY2(bg.blue() > bg.red(), qPrintable(bg.name()));
      }
      for (auto it = b.begin(); !it.atEnd(); ++it)
        QVERIFY(!it.fragment().charFormat().hasProperty(ui::MessageRenderer::kDraftProperty));
    }
  }

  void toggling_off_removes_the_marks_and_on_brings_them_back() {
    const int before = marked_chars(transcript());
    QVERIFY(before > 0);
    const QString text = chat()->transcript_text();
    chat()->draft_marks_box()->setChecked(false);
    QCOMPARE(marked_chars(transcript()), 0);
    QCOMPARE(chat()->transcript_text(), text);  // the text stays as it was
    QVERIFY(!ui::AppSettings::show_draft_tokens());
    chat()->draft_marks_box()->setChecked(true);
    QCOMPARE(marked_chars(transcript()), before);
    QVERIFY(ui::AppSettings::show_draft_tokens());
  }

  void a_reloaded_conversation_keeps_the_marks() {
    const ui::Conversation saved = chat()->conversation();
    const Masked shown = last_reply(transcript());
    QVERIFY(shown.marked() > 0);
    QFile f(chat()->store().path_for(saved.id));
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY(f.readAll().contains("\"draft_spans\""));
    const ui::Conversation loaded = ui::ConversationStore(store_dir_).load(saved.id);
    QVERIFY(loaded == saved);
    QCOMPARE(loaded.stats_at(1).draft_spans, saved.stats_at(1).draft_spans);
    chat()->new_chat();
    QCOMPARE(marked_chars(transcript()), 0);
    chat()->open_conversation(saved.id);
    const Masked again = last_reply(transcript());
    QCOMPARE(again.chars, shown.chars);
    QCOMPARE(again.mask, shown.mask);
  }

  void the_marks_follow_the_theme() {
    auto mark_color = [this] {
      QColor color;
      for (QTextBlock b = transcript()->begin(); b.isValid() && !color.isValid(); b = b.next()) marks_of(b, &color);
      return color;
    };
    ui::AppSettings s = bench_->window().settings();
    const QString theme = s.theme;
    s.theme = "light";
    bench_->window().set_settings(s);
    QVERIFY(QTest::qWaitFor([&] { return mark_color().isValid() && mark_color().lightness() > 160; }, 5000));
    s.theme = "dark";
    bench_->window().set_settings(s);
    (void)QTest::qWaitFor([&] { return mark_color().lightness() < 110; }, 5000);
    const QColor dark = mark_color();
    QVERIFY2(dark.isValid() && dark.lightness() < 110, qPrintable(dark.name()));
    QVERIFY2(dark.blue() > dark.red(), qPrintable(dark.name()));
    s.theme = theme;
    bench_->window().set_settings(s);
  }

  void the_reply_is_marked_while_it_streams() {
    // Slow motion: each engine step waits, so the reply is seen half written.
    ui::AppSettings s = bench_->window().settings();
    s.step_delay_ms = 40;
    bench_->window().set_settings(s);
    chat()->new_chat();
    tokens_.clear();
    from_draft_.clear();
    chat()->input()->setPlainText("Once upon a time");
    chat()->send();
    QVERIFY(chat()->is_generating());
    bool seen = false;
    QVERIFY(QTest::qWaitFor([&] {
      if (chat()->is_generating() && chat()->stream_rewrites() > 0 && marked_chars(transcript()) > 0 &&
          chat()->transcript_text().contains(QStringLiteral("▍")))
        seen = true;
      return seen || !chat()->is_generating();
    }, 60000));
    QVERIFY2(seen, "no marks while the reply streamed");
    // What is shown so far is what the engine flagged so far.
    const Masked streaming = last_reply(transcript());
    QVERIFY(QTest::qWaitFor([&] { return !chat()->is_generating(); }, 60000));
    s.step_delay_ms = 0;
    bench_->window().set_settings(s);
    const Masked done = last_reply(transcript());
    QVERIFY2(done.chars.startsWith(streaming.chars.left(streaming.chars.size() - 1)),
             qPrintable(streaming.chars + "\n" + done.chars));  // less the cursor
    const qsizetype n = streaming.chars.size() - 1;
    QCOMPARE(streaming.mask.left(n), done.mask.left(n));
  }

  void marks_follow_markdown_code_and_thinking() {
    // Emphasis markup is not text: the marked word is.
    const QString reply = "<think>weigh it up</think>\nSay **hello** to `x`\n\n```py\nprint(1)\n```\n";
    auto span = [&](const QString& what) {
      const int at = int(reply.indexOf(what));
      return std::pair<int, int>{at, at + int(what.size())};
    };
    const ui::TextSpans spans{span("up"), span("hello"), span("x`"), span("print")};
    QVERIFY(ui::valid_spans(spans, reply.size()));
    QCOMPARE(rendered_marks(reply, spans, true), QString("up|hello|x|print"));
    // A collapsed thinking block shows nothing of it.
    QCOMPARE(rendered_marks(reply, spans, false), QString("hello|x|print"));
    // A span over markup and text marks the text alone; one over a line break, both lines.
    const QString two = "Hello **bold** end\n\nnext line";
    const ui::TextSpans over{{6, 14}, {15, 24}};
    QCOMPARE(rendered_marks(two, over, false), QString("bold|end|next"));
    // The streaming rewrite cuts the growing block and writes it again into the block left
    // empty: the marks are the new text's, none left from before.
    QTextDocument doc;
    QTextCursor c(&doc);
    ui::MessageRenderer r(test_style());
    const ui::TextSpans first{{0, 5}}, then{{6, 11}};
    r.write_markdown(c, "Hello", {&first, 0});
    QCOMPARE(marked_runs(doc), QString("Hello"));
    c.select(QTextCursor::Document);
    c.removeSelectedText();
    r.write_markdown(c, "Hello world", {&then, 0});
    QCOMPARE(marked_runs(doc), QString("world"));
    c.select(QTextCursor::Document);
    c.removeSelectedText();
    const ui::TextSpans later{{20, 25}};
    r.write_markdown(c, "Hello world", {&later, 0});  // nothing of it marked
    QCOMPARE(marked_runs(doc), QString());
  }

  void older_files_load_and_malformed_spans_are_refused_naming_the_field() {
    // A version 2 file written before the spans were kept: no marks, the old footer.
    const QByteArray old = R"({"version": 2, "id": "c1", "title": "t", "messages": [],
      "nodes": [{"role": "user", "content": "Hi", "parent": -1, "active_child": 1},
                {"role": "assistant", "content": "Hello there", "parent": 0, "active_child": -1,
                 "stats": {"output_tokens": 3, "draft_tokens": 2, "mean_acceptance_length": 2.0}}],
      "path": [0, 1]})";
    const ui::Conversation c = ui::Conversation::from_json(QJsonDocument::fromJson(old).object(), "old.json");
    QVERIFY(c.stats_at(1).draft_spans.empty());
    QVERIFY2(c.stats_at(1).footer().contains("2 from accepted drafts (2.00 per verification)"),
             qPrintable(c.stats_at(1).footer()));
    // Spans round-trip; ones outside the message, overlapping or not pairs are refused.
    ui::Conversation with = c;
    with.nodes[1].stats.draft_spans = {{0, 5}, {6, 11}};
    QCOMPARE(ui::Conversation::from_json(with.to_json(), "ok.json").stats_at(1).draft_spans, with.nodes[1].stats.draft_spans);
    for (const char* bad : {"[[0, 50]]", "[[3, 5], [4, 6]]", "[[2, 1]]", "[[0]]", "\"0-5\"", "[[0, \"5\"]]"}) {
      QJsonObject o = with.to_json();
      QJsonArray nodes = o["nodes"].toArray();
      QJsonObject node = nodes[1].toObject();
      QJsonObject stats = node["stats"].toObject();
      stats["draft_spans"] = QJsonDocument::fromJson(QByteArray("{\"v\": ") + bad + "}").object()["v"];
      node["stats"] = stats;
      nodes[1] = node;
      o["nodes"] = nodes;
      try {
        ui::Conversation::from_json(o, "bad.json");
        QFAIL(qPrintable(QString("accepted draft_spans %1").arg(bad)));
      } catch (const Error& e) {
        QVERIFY2(QString(e.what()).contains("bad.json") && QString(e.what()).contains("draft_spans"), e.what());
      }
    }
  }
};

QTEST_MAIN(TestChatDraftMarks)
#include "test_chat_draft_marks.moc"
