// The chat as a user meets it: replies rendered as Markdown (a table and a code block appear as
// such, also while streaming, without rewriting the messages above), a footer per reply,
// regenerate and edit as branches that survive save and load, the context meter counted by the
// engine, thinking blocks, the model library and drag-and-drop, saved chats searched, renamed,
// exported, a corrupt one listed as skipped, and the keyboard.
#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTest>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextDocument>
#include <QTextDocumentFragment>
#include <QTextFrame>
#include <QTextTable>
#include <QTreeWidget>
#include <QUrl>

#include "chat_view.h"
#include "model_library.h"
#include "sampling_params_editor.h"
#include "ui_test_support.h"

using namespace llmwb;

namespace {

const char* kMarkdownReply =
    "## Results\n\n"
    "Here is **what** I found, see [the docs](https://example.com/docs):\n\n"
    "- first item\n- second item with `inline code`\n\n"
    "| Model | Params |\n|---|---|\n| stories | 260K |\n| qwen3 | 0.6B |\n\n"
    "```python\ndef hello():\n    print(\"hi\")\n```\n\n"
    "Done.";

// Frames of the transcript (code blocks, tables), depth first.
std::vector<QTextFrame*> frames_of(QTextFrame* root) {
  std::vector<QTextFrame*> out;
  for (QTextFrame* f : root->childFrames()) {
    out.push_back(f);
    for (QTextFrame* g : frames_of(f)) out.push_back(g);
  }
  return out;
}

QTextTable* first_table(QTextDocument* doc) {
  for (QTextFrame* f : frames_of(doc->rootFrame()))
    if (auto* t = qobject_cast<QTextTable*>(f)) return t;
  return nullptr;
}

// The text of the first non-table frame (a code block) and whether its font is monospace.
QString first_code_frame(QTextDocument* doc, bool* monospace) {
  for (QTextFrame* f : frames_of(doc->rootFrame())) {
    if (qobject_cast<QTextTable*>(f)) continue;
    QTextCursor c(doc);
    c.setPosition(f->firstPosition());
    c.setPosition(f->lastPosition(), QTextCursor::KeepAnchor);
    const QFont font = QTextCursor(doc->findBlock(f->firstPosition())).charFormat().font();
    *monospace = QFontInfo(font).fixedPitch() || font.fixedPitch();
    return c.selection().toPlainText();
  }
  return {};
}

// A chat with no engine behind it: replies are fed as the worker would send them.
struct FedChat {
  ui::ChatView view;
  quint64 ticket = 0;
  explicit FedChat(const QString& store, ChatFormat format = ChatFormat::Completion) {
    view.set_store(ui::ConversationStore(store));
    view.new_chat();
    view.set_model(true, chat_template_for(format), "fed");
  }
  bool send(const QString& text) {
    QSignalSpy requests(&view, &ui::ChatView::generate_requested);
    view.input()->setPlainText(text);
    view.send();
    if (requests.count() != 1) return false;
    ticket = requests.first().first().value<ui::GenerationRequest>().ticket;
    return true;
  }
  void delta(const QString& text, int tokens, bool finished = false, const QString& whole = {}) {
    ui::TokenDelta d;
    d.ticket = ticket;
    d.text = text.toStdString();
    d.token_ids.assign(size_t(tokens), 7);
    d.finished = finished;
    if (finished) {
      d.finish_reason = FinishReason::Stop;
      d.final_text = whole.toStdString();
      d.num_prompt_tokens = 5;
      d.num_output_tokens = 40;
      d.time_to_first_token = 0.012;
      d.total_time = 0.112;
    }
    view.on_delta(d);
  }
};

}  // namespace

class TestChatFeatures : public QObject {
  Q_OBJECT

 private:
  std::unique_ptr<gui::Workbench> bench_;
  QString store_dir_;
  ui::ChatView* chat() { return bench_->window().chat_view(); }

  void send(const QString& text) { QVERIFY(uitest::send_chat(chat(), text)); }

 private slots:
  void initTestCase() {
    bench_ = uitest::start_application(ui::MainWindow::View::Chat);
    store_dir_ = uitest::scratch_dir("chat-features");
    QVERIFY(uitest::open_chat(*bench_, store_dir_, 16));
  }

  void cleanupTestCase() { bench_.reset(); }

  void a_markdown_reply_shows_a_table_a_code_block_a_list_and_a_link() {
    FedChat fed(uitest::scratch_dir("markdown-render"));
    QVERIFY(fed.send("Show me"));
    fed.delta(kMarkdownReply, 40, true, kMarkdownReply);
    QTextDocument* doc = fed.view.transcript()->document();
    QTextTable* table = first_table(doc);
    QVERIFY2(table, "no table in the transcript");
    QCOMPARE(table->rows(), 3);
    QCOMPARE(table->columns(), 2);
    QCOMPARE(table->cellAt(2, 1).firstCursorPosition().block().text(), QString("0.6B"));
    bool mono = false;
    const QString code = first_code_frame(doc, &mono);
    QVERIFY2(code.contains("def hello():"), qPrintable(code));
    QVERIFY(mono);
    QCOMPARE(fed.view.code_blocks(), QStringList{"def hello():\n    print(\"hi\")"});
    // The fences are not shown; the heading, list and link are formatted, not raw Markdown.
    const QString text = fed.view.transcript_text();
    QVERIFY(!text.contains("```") && !text.contains("## ") && !text.contains("](https"));
    bool heading = false, list = false, link = false;
    for (QTextBlock b = doc->begin(); b.isValid(); b = b.next()) {
      heading |= b.blockFormat().headingLevel() == 2 && b.text() == "Results";
      list |= b.textList() != nullptr && b.text() == "first item";
      for (auto it = b.begin(); !it.atEnd(); ++it)
        link |= it.fragment().charFormat().anchorHref() == "https://example.com/docs";
    }
    QVERIFY(heading);
    QVERIFY(list);
    QVERIFY(link);
    // The code block's Copy link puts the code on the clipboard.
    emit fed.view.transcript()->anchorClicked(QUrl("llmwb-copy:0"));
    QCOMPARE(QApplication::clipboard()->text(), QString("def hello():\n    print(\"hi\")"));
    // The footer: tokens, TTFT, speed, stop reason and the configuration.
    QVERIFY2(text.contains("40 tokens · TTFT 12 ms · 390.0 tok/s · stop · fed"), qPrintable(text));
  }

  void a_streaming_reply_renders_markdown_live_without_rewriting_the_messages_above() {
    FedChat fed(uitest::scratch_dir("markdown-stream"));
    QVERIFY(fed.send("First"));
    fed.delta("Earlier answer.", 3, true, "Earlier answer.");
    QVERIFY(fed.send("Second"));
    QTextDocument* doc = fed.view.transcript()->document();
    const QTextBlock first = doc->findBlock(0);
    const int revision = first.revision();
    const QString above = first.text();
    // Complete blocks of the reply are written once: the heading keeps its block while the
    // rest streams in.
    auto heading_block = [doc] {
      for (QTextBlock b = doc->begin(); b.isValid(); b = b.next())
        if (b.text() == "Results" && b.blockFormat().headingLevel() == 2) return b;
      return QTextBlock();
    };
    // The heading's revision is taken once the list has begun streaming ("- second"), at the
    // first piece from there on where the transcript shows it (on a loaded machine the pacer
    // may show it a few pieces late); at least five pieces must stream in after that, so the
    // check below covers the table's and the code block's rewrites.
    int heading_revision = -1, pieces_after = 0;
    bool list_begun = false;
    for (const QString& piece : QString(kMarkdownReply).split(QRegularExpression("(?<=\\n)"))) {
      if (heading_revision >= 0) ++pieces_after;
      fed.delta(piece, 2);
      QTest::qWait(40);  // the pacer rewrites the reply at most every 33 ms
      list_begun = list_begun || piece.startsWith("- second");
      if (heading_revision < 0 && list_begun && heading_block().isValid())
        heading_revision = heading_block().revision();
    }
    QVERIFY(heading_revision >= 0);
    QVERIFY2(pieces_after >= 5, qPrintable(QString::number(pieces_after)));
    QVERIFY(heading_block().isValid());
    QCOMPARE(heading_block().revision(), heading_revision);
    QTRY_VERIFY(first_table(doc) != nullptr);
    bool mono = false;
    QVERIFY(first_code_frame(doc, &mono).contains("print"));
    QVERIFY(fed.view.transcript_text().contains("▍"));
    // The messages above were not rewritten: same block, same revision.
    QCOMPARE(doc->findBlock(0).text(), above);
    QCOMPARE(doc->findBlock(0).revision(), revision);
    fed.delta(QString(), 0, true, kMarkdownReply);
    QVERIFY(!fed.view.transcript_text().contains("▍"));
    QVERIFY(first_table(doc) != nullptr);
  }

  void a_reasoning_reply_shows_a_collapsible_thinking_block_with_its_token_count() {
    FedChat fed(uitest::scratch_dir("thinking"), ChatFormat::Qwen3);
    fed.view.show();
    fed.view.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&fed.view));
    QVERIFY(!fed.view.thinking_box()->isHidden());
    QVERIFY(fed.send("Why?"));
    fed.delta("<think>\nLet me reason", 4);
    fed.delta(" about it.\n</think>\n\nBecause **so**.", 5);
    const QString whole = "<think>\nLet me reason about it.\n</think>\n\nBecause **so**.";
    fed.delta(QString(), 0, true, whole);
    const QString text = fed.view.transcript_text();
    QVERIFY2(text.contains("▸ Thinking · 7 tokens"), qPrintable(text));  // 4 + 3 of 5 (by characters)
    QVERIFY(!text.contains("Let me reason"));  // collapsed
    QVERIFY(text.contains("Because so."));
    QCOMPARE(fed.view.conversation().stats_at(1).thinking_tokens, 7);
    emit fed.view.transcript()->anchorClicked(QUrl("llmwb-think:1"));
    QVERIFY(fed.view.transcript_text().contains("Let me reason about it."));
    QVERIFY(fed.view.transcript_text().contains("▾ Thinking"));
    QTest::keyClick(fed.view.input(), Qt::Key_T, Qt::ControlModifier);  // and back, by keyboard
    QVERIFY(!fed.view.transcript_text().contains("Let me reason"));
  }

  void regenerate_keeps_the_previous_reply_as_a_branch_and_branches_survive_save_and_load() {
    chat()->new_chat();
    send("Once upon a time");
    const std::string first = chat()->conversation().messages.back().content;
    SamplingParams p = chat()->sampling()->params();
    p.temperature = 1.0f;
    p.seed = 7;
    chat()->sampling()->set_params(p);
    chat()->regenerate();
    QVERIFY(QTest::qWaitFor([&] { return !chat()->is_generating(); }, 60000));
    p.temperature = 0.0f;
    chat()->sampling()->set_params(p);
    QCOMPARE(chat()->conversation().messages.size(), size_t(2));
    QCOMPARE(chat()->conversation().branch_at(1), std::make_pair(1, 2));
    QVERIFY(chat()->transcript_text().contains("‹ 2/2 ›"));
    // ‹ goes back to the first reply.
    emit chat()->transcript()->anchorClicked(QUrl("llmwb-branch:1/-1"));
    QCOMPARE(chat()->conversation().branch_at(1), std::make_pair(0, 2));
    QCOMPARE(chat()->conversation().messages.back().content, first);
    // Editing the user message forks: the original turn stays as branch 1 of 2.
    chat()->edit_message(0);
    QCOMPARE(chat()->input()->toPlainText(), QString("Once upon a time"));
    send("Once upon a time, a dog");
    QCOMPARE(chat()->conversation().branch_at(0), std::make_pair(1, 2));
    QCOMPARE(chat()->conversation().nodes.size(), size_t(5));
    const ui::Conversation saved = chat()->conversation();
    const ui::Conversation loaded = ui::ConversationStore(store_dir_).load(saved.id);
    QVERIFY(loaded == saved);
    chat()->new_chat();
    chat()->open_conversation(saved.id);
    QVERIFY(chat()->conversation() == saved);
    chat()->switch_branch(0, -1);
    QCOMPARE(chat()->conversation().messages[0].content, std::string("Once upon a time"));
    QCOMPARE(chat()->conversation().branch_at(1), std::make_pair(0, 2));  // as last shown
    QCOMPARE(ui::ConversationStore(store_dir_).load(saved.id).messages[0].content, std::string("Once upon a time"));
    // The footer names the reply's numbers and the configuration that made it.
    const ui::MessageStats& s = chat()->conversation().stats_at(1);
    QCOMPARE(s.output_tokens, 16);
    QCOMPARE(s.stop_reason, QString("length"));
    QVERIFY2(s.config.contains("greedy") && s.config.contains("max 16"), qPrintable(s.config));
    QVERIFY(chat()->transcript_text().contains(s.footer()));
  }

  void a_version_1_conversation_file_still_loads_as_one_branch() {
    const QString dir = uitest::scratch_dir("conversations-v1");
    QFile f(dir + "/old.json");
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"version": 1, "id": "old", "title": "Old", "system_prompt": "", "format": "auto",
               "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]})");
    f.close();
    const ui::Conversation c = ui::ConversationStore(dir).load("old");
    QCOMPARE(c.messages.size(), size_t(2));
    QCOMPARE(c.nodes.size(), size_t(2));
    QCOMPARE(c.branch_at(1), std::make_pair(0, 1));
    QCOMPARE(c.messages[1].content, std::string("Hello"));
  }

  void the_context_meter_counts_what_the_engine_tokenizes_and_warns_before_an_overflow() {
    chat()->new_chat();
    chat()->input()->setPlainText("Once upon a time, there was a big red ball.");
    QTRY_VERIFY(chat()->context_prompt_tokens() > 0);
    const int counted = chat()->context_prompt_tokens();
    QVERIFY(chat()->context_label()->text().contains(QString::number(counted)));
    send("Once upon a time, there was a big red ball.");
    QCOMPARE(counted, int(chat()->last_prompt_ids().size()));
    QCOMPARE(chat()->conversation().stats_at(1).prompt_tokens, counted);

    // A second message that would overflow with the first turn kept: said before sending.
    chat()->input()->setPlainText("The ball rolled away.");
    QTRY_VERIFY(chat()->context_prompt_tokens() > 0);
    const int ctx = chat()->context_length();
    QVERIFY(ctx > 0);
    SamplingParams p = chat()->sampling()->params();
    const int saved_max = p.max_tokens;
    p.max_tokens = ctx - chat()->context_prompt_tokens() + 1;
    chat()->sampling()->set_params(p);
    chat()->auto_truncate_box()->setChecked(false);
    chat()->input()->setPlainText("The ball rolled away. ");
    QTRY_VERIFY(chat()->context_prompt_tokens() > 0);
    QVERIFY2(chat()->context_label()->text().contains("too long"), qPrintable(chat()->context_label()->text()));
    QVERIFY(!chat()->truncate_and_send_button()->isHidden());
    chat()->send();
    QVERIFY(!chat()->is_generating());  // never cut silently
    QCOMPARE(chat()->conversation().messages.size(), size_t(2));
    QTest::mouseClick(chat()->truncate_and_send_button(), Qt::LeftButton);
    QVERIFY(chat()->is_generating());
    QVERIFY(QTest::qWaitFor([&] { return !chat()->is_generating(); }, 60000));
    QCOMPARE(chat()->conversation().messages.size(), size_t(4));
    QCOMPARE(chat()->conversation().stats_at(3).dropped_turns, 1);
    QVERIFY(!QString::fromStdString(chat()->last_prompt_text()).contains("big red ball"));
    QVERIFY(chat()->transcript_text().contains("1 oldest turn left out of the prompt"));
    p.max_tokens = saved_max;
    chat()->sampling()->set_params(p);
  }

  void the_model_library_lists_the_folder_with_header_details_and_opens_by_double_click() {
    ui::ModelLibrary* lib = bench_->window().model_library();
    lib->set_folder(uitest::shared_path("models/stories260K"));
    const QStringList paths = lib->model_paths();
    QVERIFY2(paths.size() >= 2, qPrintable(paths.join(", ")));
    QTreeWidget* t = lib->table();
    QTreeWidgetItem* gguf = nullptr;
    QTreeWidgetItem* l2c = nullptr;
    for (int i = 0; i < t->topLevelItemCount(); ++i) {
      QTreeWidgetItem* it = t->topLevelItem(i);
      const QString path = it->data(ui::ModelLibrary::Path, Qt::UserRole + 1).toString();
      if (path.endsWith("stories260K.gguf")) gguf = it;
      if (path.endsWith("stories260K.bin")) l2c = it;
      QVERIFY2(!path.endsWith("tok512.bin"), "a tokenizer is not a model");
    }
    QVERIFY(gguf && l2c);
    QCOMPARE(gguf->text(ui::ModelLibrary::Architecture), QString("llama"));
    QVERIFY(gguf->text(ui::ModelLibrary::Context).toInt() > 0);
    QCOMPARE(l2c->text(ui::ModelLibrary::Context), QString("512"));  // the checkpoint header's seq_len
    QVERIFY(gguf->text(ui::ModelLibrary::Parameters).endsWith("K"));
    QVERIFY(!gguf->text(ui::ModelLibrary::Quantization).isEmpty());
    QVERIFY(!gguf->text(ui::ModelLibrary::Size).isEmpty());
    QCOMPARE(l2c->text(ui::ModelLibrary::Format), QString("llama2c"));
    QSignalSpy ready(&bench_->window(), &ui::MainWindow::model_ready);
    emit t->itemActivated(l2c, 0);
    QVERIFY(ready.wait(60000));
    QCOMPARE(bench_->window().model_info().format, std::string("llama2c"));
  }

  void dropping_a_model_file_onto_the_window_opens_it() {
    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(uitest::stories_gguf())});
    QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&bench_->window(), &enter);
    QVERIFY(enter.isAccepted());
    QSignalSpy ready(&bench_->window(), &ui::MainWindow::model_ready);
    QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&bench_->window(), &drop);
    QVERIFY(drop.isAccepted());
    QVERIFY(ready.wait(60000));
    QCOMPARE(bench_->window().model_info().format, std::string("gguf"));
  }

  void the_model_remembers_its_template_and_sampling() {
    chat()->new_chat();
    chat()->format_box()->setCurrentIndex(chat()->format_box()->findData("zephyr"));
    SamplingParams p = chat()->sampling()->params();
    p.max_tokens = 13;
    chat()->sampling()->set_params(p);
    send("Hello");
    p.max_tokens = 16;
    chat()->sampling()->set_params(p);
    chat()->format_box()->setCurrentIndex(0);
    chat()->format_box()->setCurrentIndex(chat()->format_box()->findData("zephyr"));
    QVERIFY(uitest::open_model_and_wait(bench_->window(), uitest::stories_gguf()));
    QCOMPARE(chat()->sampling()->params().max_tokens, 13);
    chat()->new_chat();
    QCOMPARE(chat()->format_box()->currentData().toString(), QString("zephyr"));
    chat()->format_box()->setCurrentIndex(0);
    p.max_tokens = 16;
    chat()->sampling()->set_params(p);

    // The context length chosen in Settings while the model is loaded is the model's.
    ui::MainWindow& w = bench_->window();
    QSignalSpy ready(&w, &ui::MainWindow::model_ready);
    ui::AppSettings s = w.settings();
    s.max_model_len = 96;
    w.set_settings(s);  // reopens the model with it
    QVERIFY(ready.wait(60000));
    QCOMPARE(chat()->context_length(), 96);
    QVERIFY(uitest::open_model_and_wait(w, uitest::shared_path("models/stories260K/stories260K.bin")));
    s.max_model_len = 0;
    w.set_settings(s);  // the other model's: reopens it with the default
    QVERIFY(ready.wait(60000));
    QCOMPARE(chat()->context_length(), 512);
    QVERIFY(uitest::open_model_and_wait(w, uitest::stories_gguf()));
    QCOMPARE(chat()->context_length(), 96);  // remembered, although the setting is 0 now
    ui::AppSettings back = w.settings();
    back.max_model_len = 0;
    w.set_settings(back);  // unchanged setting: the remembered 96 stays
    QCOMPARE(chat()->context_length(), 96);
  }

  void saved_chats_are_searched_renamed_and_exported_and_a_corrupt_one_is_listed_as_skipped() {
    chat()->new_chat();
    send("A purple elephant");
    const QString id = chat()->conversation().id;
    QTest::keyClicks(chat()->search_box(), "purple eleph");
    QCOMPARE(chat()->conversation_list()->count(), 1);
    QCOMPARE(chat()->conversation_list()->item(0)->data(Qt::UserRole).toString(), id);
    chat()->search_box()->clear();
    QVERIFY(chat()->conversation_list()->count() > 1);
    chat()->rename_conversation(id, "Elephants");
    QCOMPARE(ui::ConversationStore(store_dir_).load(id).title, QString("Elephants"));
    QVERIFY(!chat()->conversation_list()->findItems("Elephants", Qt::MatchExactly).isEmpty());
    const QString out = uitest::scratch_dir("export");
    QVERIFY(chat()->export_json(out + "/chat.json"));
    const QJsonDocument json = QJsonDocument::fromJson(uitest::read_text(out + "/chat.json").toUtf8());
    QVERIFY(ui::Conversation::from_json(json.object(), "chat.json") == chat()->conversation());
    QVERIFY(chat()->export_markdown(out + "/chat.md"));
    QVERIFY(uitest::read_text(out + "/chat.md").contains("# Elephants"));

    QFile broken(store_dir_ + "/broken.json");
    QVERIFY(broken.open(QIODevice::WriteOnly));
    broken.write("{\"id\": \"broken\", \"messages\": [");
    broken.close();
    chat()->rename_conversation(id, "Elephants again");  // reloads the list
    const QList<QListWidgetItem*> skipped = chat()->conversation_list()->findItems("broken.json", Qt::MatchContains);
    QCOMPARE(skipped.size(), 1);
    QVERIFY(skipped.front()->text().contains("skipped"));
    QVERIFY(!(skipped.front()->flags() & Qt::ItemIsEnabled));
    QCOMPARE(uitest::read_text(store_dir_ + "/broken.json"), QString("{\"id\": \"broken\", \"messages\": ["));
    QFile::remove(store_dir_ + "/broken.json");
  }

  void every_chat_action_has_a_shortcut() {
    ui::MainWindow& w = bench_->window();
    w.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    // Ctrl+L comes back to the input from anywhere.
    chat()->search_box()->setFocus();
    QTest::keyClick(chat()->search_box(), Qt::Key_L, Qt::ControlModifier);
    QTRY_VERIFY(chat()->input()->hasFocus());
    // Ctrl+F searches the saved chats.
    QTest::keyClick(chat()->input(), Qt::Key_F, Qt::ControlModifier);
    QTRY_VERIFY(chat()->search_box()->hasFocus());
    // Ctrl+R regenerates (a new branch), Alt+Left goes back to the previous one.
    chat()->new_chat();
    send("Once upon a time");
    chat()->input()->setFocus();
    QTest::keyClick(chat()->input(), Qt::Key_R, Qt::ControlModifier);
    QVERIFY(chat()->is_generating());
    QVERIFY(QTest::qWaitFor([&] { return !chat()->is_generating(); }, 60000));
    QCOMPARE(chat()->conversation().branch_at(1), std::make_pair(1, 2));
    QTest::keyClick(chat()->input(), Qt::Key_Left, Qt::AltModifier);
    QCOMPARE(chat()->conversation().branch_at(1), std::make_pair(0, 2));
    // Ctrl+E edits the last message.
    QTest::keyClick(chat()->input(), Qt::Key_E, Qt::ControlModifier);
    QCOMPARE(chat()->input()->toPlainText(), QString("Once upon a time"));
    // The window's actions: Ctrl+O open model, Ctrl+N new chat, Ctrl+Enter send, Esc stop.
    QStringList keys;
    for (QAction* a : w.findChildren<QAction*>())
      for (const QKeySequence& k : a->shortcuts()) keys << k.toString();
    for (const char* k : {"Ctrl+O", "Ctrl+N", "Ctrl+Return", "Esc", "Ctrl+L", "Ctrl+Shift+O"})
      QVERIFY2(keys.contains(k), k);
  }
};

QTEST_MAIN(TestChatFeatures)
#include "test_chat_features.moc"
