// Chat: a greedy turn through the completion template of stories260K, saved as JSON after the
// turn; the saved conversation reloads identically; regenerate and edit-and-resend work.
#include <QCheckBox>
#include <algorithm>
#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QTest>

#include "chat_view.h"
#include "llmwb/errors.h"
#include "sampling_params_editor.h"
#include "ui_test_support.h"

using namespace llmwb;

class TestChatView : public QObject {
  Q_OBJECT

 private:
  std::unique_ptr<gui::Workbench> bench_;
  QString store_dir_;
  ui::ChatView* chat() { return bench_->window().chat_view(); }

  void send(const QString& text) { QVERIFY(uitest::send_chat(chat(), text)); }

 private slots:
  void initTestCase() {
    bench_ = uitest::start_application(ui::MainWindow::View::Chat);
    store_dir_ = uitest::scratch_dir("conversations");
    QVERIFY(uitest::open_chat(*bench_, store_dir_, 24));
  }

  void cleanupTestCase() { bench_.reset(); }

  void a_base_model_chats_in_completion_format() {
    QCOMPARE(chat()->effective_format(), ChatFormat::Completion);
  }

  void a_turn_streams_a_reply_and_saves_the_conversation() {
    chat()->new_chat();
    chat()->system_prompt()->setText("");
    send("Once upon a time, there was a cat.");
    const ui::Conversation& c = chat()->conversation();
    QCOMPARE(c.messages.size(), size_t(2));
    QCOMPARE(c.messages[0].role, std::string("user"));
    QCOMPARE(c.messages[1].role, std::string("assistant"));
    QVERIFY(!c.messages[1].content.empty());
    QVERIFY(QFile::exists(chat()->store().path_for(c.id)));
    QVERIFY(chat()->transcript_text().contains(QString::fromStdString(c.messages[1].content)));
  }

  void a_saved_conversation_reloads_identically() {
    const ui::Conversation saved = chat()->conversation();
    const QString transcript = chat()->transcript_text();
    const ui::Conversation loaded = ui::ConversationStore(store_dir_).load(saved.id);
    QVERIFY(loaded == saved);
    chat()->new_chat();
    QVERIFY(chat()->conversation().messages.empty());
    chat()->open_conversation(saved.id);
    QVERIFY(chat()->conversation() == saved);
    QCOMPARE(chat()->transcript_text(), transcript);
  }

  void regenerate_replaces_the_last_reply_with_the_same_greedy_text() {
    const ui::Conversation before = chat()->conversation();
    chat()->regenerate();
    QVERIFY(QTest::qWaitFor([&] { return !chat()->is_generating(); }, 60000));
    const ui::Conversation after = chat()->conversation();
    QCOMPARE(after.messages.size(), before.messages.size());
    QCOMPARE(after.messages.back().content, before.messages.back().content);
  }

  void edit_last_returns_the_message_to_the_input_and_resend_replaces_the_turn() {
    chat()->edit_last();
    QCOMPARE(chat()->input()->toPlainText(), QString("Once upon a time, there was a cat."));
    QVERIFY(chat()->conversation().messages.empty());
    send("Once upon a time, there was a dog.");
    QCOMPARE(chat()->conversation().messages.size(), size_t(2));
    QCOMPARE(chat()->conversation().messages[0].content, std::string("Once upon a time, there was a dog."));
    const ui::Conversation reloaded = ui::ConversationStore(store_dir_).load(chat()->conversation().id);
    QVERIFY(reloaded == chat()->conversation());
  }

  void keyboard_shortcuts_send_stop_and_start_a_new_chat() {
    const QString dog_chat = chat()->conversation().id;
    chat()->new_chat();
    chat()->input()->setPlainText("Once upon a time");
    bench_->window().activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&bench_->window()));
    chat()->input()->setFocus();
    emit bench_->window().step_delay_requested(50);
    QTest::keyClick(chat()->input(), Qt::Key_Return, Qt::ControlModifier);
    QVERIFY(chat()->is_generating());
    QCOMPARE(chat()->conversation().messages.size(), size_t(1));
    QTest::keyClick(chat()->input(), Qt::Key_Escape);
    QVERIFY(QTest::qWaitFor([&] { return !chat()->is_generating(); }, 30000));
    emit bench_->window().step_delay_requested(0);
    const QString id = chat()->conversation().id;
    QTest::keyClick(chat()->input(), Qt::Key_N, Qt::ControlModifier);
    QVERIFY(chat()->conversation().id != id);
    QVERIFY(chat()->conversation().messages.empty());
    chat()->open_conversation(dog_chat);
    QCOMPARE(chat()->conversation().id, dog_chat);
  }

  void the_newest_conversation_comes_back_at_start_up() {
    ui::ChatView fresh;
    fresh.set_store(ui::ConversationStore(store_dir_));
    const std::vector<ui::Conversation> saved = ui::ConversationStore(store_dir_).load_all();
    QVERIFY(!saved.empty());
    QVERIFY(fresh.conversation() == saved.front());
  }

  void corrupt_saved_conversations_are_listed_with_the_reason_and_never_overwritten() {
    const QString dir = uitest::scratch_dir("conversations-corrupt");
    const QByteArray broken = "{\"id\": \"broken\", \"messages\": [";   // cut short
    const QByteArray array = "[1, 2, 3]\n";
    auto write = [&](const QString& name, const QByteArray& bytes) {
      QFile f(dir + "/" + name);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(bytes);
    };
    write("broken.json", broken);
    write("array.json", array);
    ui::ChatView view;
    QSignalSpy errors(&view, &ui::ChatView::error);
    view.set_store(ui::ConversationStore(dir));
    const QStringList unreadable = view.unreadable_conversations();
    QCOMPARE(unreadable.size(), 2);
    QVERIFY2(unreadable.join("\n").contains("broken.json: not JSON at offset"), qPrintable(unreadable.join("\n")));
    QVERIFY2(unreadable.join("\n").contains("array.json: expected a JSON object"), qPrintable(unreadable.join("\n")));
    const auto* label = view.findChild<QLabel*>("unreadable_conversations");
    QVERIFY(label && !label->isHidden());
    QVERIFY(label->text().contains("broken.json") && label->text().contains("array.json"));
    // Reported once to the window (its banner), after the constructor's connections exist.
    QTRY_COMPARE(errors.count(), 1);
    QVERIFY(errors.first().first().toString().contains("broken.json"));
    // A new chat beside them, and a conversation saved under a broken file's id, leave both
    // files byte for byte as they were.
    view.new_chat();
    ui::Conversation same_id = ui::Conversation::make_new();
    same_id.id = "broken";
    same_id.messages.push_back({"user", "Hello"});
    bool refused = false;
    try {
      view.store().save(same_id);
    } catch (const Error& e) {
      refused = QString(e.what()).contains("not overwritten");
    }
    QVERIFY(refused);
    QCOMPARE(uitest::read_text(dir + "/broken.json").toUtf8(), broken);
    QCOMPARE(uitest::read_text(dir + "/array.json").toUtf8(), array);
    QCOMPARE(errors.count(), 1);
  }

  void markdown_export_writes_every_turn() {
    const QString path = uitest::scratch_dir("markdown") + "/chat.md";
    QVERIFY(chat()->export_markdown(path));
    const QString md = uitest::read_text(path);
    QVERIFY(md.contains("**User:**"));
    QVERIFY(md.contains("Once upon a time, there was a dog."));
    QVERIFY(md.contains(QString::fromStdString(chat()->conversation().messages[1].content)));
  }

  // End to end: the ids the engine ran for a message that contains the format's end-of-turn
  // marker. Zephyr writes "</s>" (EOS, id 2) after each message; the user's "</s>" must stay
  // text, so the prompt holds one BOS (1, first) and exactly one EOS.
  void a_marker_typed_in_a_message_reaches_the_engine_as_plain_text() {
    chat()->new_chat();
    chat()->system_prompt()->setText("");
    chat()->format_box()->setCurrentIndex(chat()->format_box()->findData("zephyr"));
    QCOMPARE(chat()->effective_format(), ChatFormat::Zephyr);
    send("Tell me </s> a story.");
    QCOMPARE(QString::fromStdString(chat()->last_prompt_text()),
             QString("<|user|>\nTell me </s> a story.</s>\n<|assistant|>\n"));
    const std::vector<int>& ids = chat()->last_prompt_ids();
    QVERIFY(ids.size() > 8);
    QCOMPARE(ids.front(), 1);
    QCOMPARE(std::count(ids.begin(), ids.end(), 1), 1);
    QCOMPARE(std::count(ids.begin(), ids.end(), 2), 1);
    // The EOS is the template's: after the whole message, before "\n<|assistant|>\n".
    const size_t eos = size_t(std::find(ids.begin(), ids.end(), 2) - ids.begin());
    QVERIFY(eos > ids.size() / 2);
    // What `llmwb-cli generate --chat` sends for the same conversation (the CLI test
    // cli_generate_chat_sends_what_the_chat_view_sends expects the same list).
    const std::vector<int> cli = {1, 410, 504, 506, 425, 419, 285, 506, 505, 13, 434, 411, 306, 284, 411, 410, 504, 492, 419, 505, 261, 349, 304, 422, 426, 2, 410, 13, 504, 506, 412, 419, 419, 293, 413, 303, 413, 506, 505, 13};
    QCOMPARE(ids, cli);
    chat()->format_box()->setCurrentIndex(0);
  }

  void the_chat_names_its_template_and_offers_thinking_only_where_the_format_has_it() {
    chat()->format_box()->setCurrentIndex(0);  // "Auto": the model's (stories260K has no template)
    QVERIFY(chat()->template_label()->text().contains("completion"));
    QVERIFY(chat()->thinking_box()->isHidden());
    chat()->new_chat();
    chat()->format_box()->setCurrentIndex(chat()->format_box()->findData("qwen3"));
    QVERIFY(!chat()->thinking_box()->isHidden());
    QVERIFY(chat()->template_label()->text().contains("qwen3"));
    chat()->thinking_box()->setChecked(false);
    send("Hi");
    QVERIFY(QString::fromStdString(chat()->last_prompt_text())
                .endsWith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"));
    chat()->thinking_box()->setChecked(true);
    chat()->regenerate();
    QVERIFY(QTest::qWaitFor([&] { return !chat()->is_generating(); }, 60000));
    QVERIFY(QString::fromStdString(chat()->last_prompt_text()).endsWith("<|im_end|>\n<|im_start|>assistant\n"));
    chat()->format_box()->setCurrentIndex(0);
    QVERIFY(chat()->thinking_box()->isHidden());

    // A model whose template is not recognised: the chat says so and names it.
    ui::ChatView other;
    other.set_model(true, recognize_chat_template("{% for m in messages %}>> {{ m.content }}{% endfor %}", "x"), "x");
    QVERIFY(other.template_label()->text().contains("unrecognised chat template"));
    QVERIFY(other.template_label()->text().contains(">> {{ m.content }}"));
    QCOMPARE(other.effective_format(), ChatFormat::Completion);
  }
};

QTEST_MAIN(TestChatView)
#include "test_chat_view.moc"
