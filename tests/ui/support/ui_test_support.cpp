#include "ui_test_support.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSettings>
#include <QStandardPaths>
#include <QPlainTextEdit>
#include <QTest>

#include "chat_view.h"
#include "conversation_store.h"
#include "sampling_params_editor.h"

namespace llmwb::uitest {

QString shared_path(const QString& rel) { return QString(LLMWB_SHARED_DIR) + "/" + rel; }

QString scratch_dir(const QString& name) {
  QDir dir(QString(LLMWB_UI_TEST_TMP) + "/" + name);
  dir.removeRecursively();
  QDir().mkpath(dir.path());
  return dir.path();
}

QString read_text(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QString::fromUtf8(f.readAll());
}

QString stories_gguf() { return shared_path("models/stories260K/stories260K.gguf"); }

void isolate_user_data() {
  // One settings file and data folder per test program: ctest -j runs several at once, and a
  // shared one would be cleared by one program in the middle of another's checks.
  QCoreApplication::setOrganizationName("llmwb-test");
  QCoreApplication::setApplicationName("llmwb-test-" + QFileInfo(QCoreApplication::applicationFilePath()).fileName());
  QStandardPaths::setTestModeEnabled(true);
  QSettings().clear();
  QDir(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)).removeRecursively();
}

std::unique_ptr<gui::Workbench> start_application(ui::MainWindow::View view) {
  isolate_user_data();
  auto bench = std::make_unique<gui::Workbench>();
  bench->window().show();
  bench->window().show_view(view);
  return bench;
}

bool open_model_and_wait(ui::MainWindow& window, const QString& path, int timeout_ms) {
  if (!window.open_model(path)) return false;
  return QTest::qWaitFor([&] { return !window.is_loading(); }, timeout_ms) && window.is_model_loaded();
}

EventLoopProbe::EventLoopProbe() {
  since_.start();
  timer_.setInterval(5);
  QObject::connect(&timer_, &QTimer::timeout, [this] {
    max_gap_ms_ = std::max(max_gap_ms_, double(since_.nsecsElapsed()) / 1e6);
    since_.restart();
    ++ticks_;
  });
  timer_.start();
}

ui::ChatView* open_chat(gui::Workbench& bench, const QString& store_dir, int max_tokens) {
  ui::ChatView* chat = bench.window().chat_view();
  chat->set_store(ui::ConversationStore(store_dir));
  if (!open_model_and_wait(bench.window(), stories_gguf())) return nullptr;
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  greedy.max_tokens = max_tokens;
  chat->sampling()->set_params(greedy);
  return chat;
}

bool send_chat(ui::ChatView* chat, const QString& text) {
  chat->input()->setPlainText(text);
  chat->send();
  if (!chat->is_generating()) {
    qWarning("the chat did not start a reply to '%s'", qPrintable(text));
    return false;
  }
  if (!QTest::qWaitFor([&] { return !chat->is_generating(); }, 60000)) {
    qWarning("the reply to '%s' did not finish within 60 s", qPrintable(text));
    return false;
  }
  if (!chat->last_error().isEmpty()) {
    qWarning("the reply to '%s' failed: %s", qPrintable(text), qPrintable(chat->last_error()));
    return false;
  }
  return true;
}

}  // namespace llmwb::uitest
