// ui_test_support.h — helpers for the Qt Test programs that drive the real application.
#pragma once

#include <QElapsedTimer>
#include <QString>
#include <QTimer>

#include <memory>

#include "workbench.h"

namespace llmwb::ui {
class ChatView;
}

namespace llmwb::uitest {

// ../shared/<rel> beside the repository (read-only models).
QString shared_path(const QString& rel);
// A fresh, empty folder for one test under the build tree.
QString scratch_dir(const QString& name);
QString read_text(const QString& path);
QString stories_gguf();

// Settings, window state and conversations go to Qt's test locations, emptied first, so a
// test neither reads nor writes the user's own.
void isolate_user_data();

// The application as a user starts it, on fresh user data, its window shown with `view` raised.
std::unique_ptr<gui::Workbench> start_application(ui::MainWindow::View view);

// Opens `path` the way File ▸ Open does and waits until the model is loaded; false on
// failure or timeout (QTest reports which).
bool open_model_and_wait(ui::MainWindow& window, const QString& path, int timeout_ms = 120000);

// The Chat view of a started application on the conversation store in `store_dir`, the
// stories260K model loaded, greedy sampling of at most `max_tokens`; null on failure.
ui::ChatView* open_chat(gui::Workbench& bench, const QString& store_dir, int max_tokens);
// Sends `text` from the chat's input and waits for the whole reply; false (reported) on an error.
bool send_chat(ui::ChatView* chat, const QString& text);

// Measures how long the GUI thread's event loop goes without turning: a timer asks to fire
// every few milliseconds and the longest gap between two firings is kept. A forward pass or a
// report made in the GUI thread shows as a gap as long as the work.
class EventLoopProbe {
 public:
  EventLoopProbe();
  double max_gap_ms() const { return max_gap_ms_; }
  int ticks() const { return ticks_; }

 private:
  QTimer timer_;
  QElapsedTimer since_;
  double max_gap_ms_ = 0.0;
  int ticks_ = 0;
};

}  // namespace llmwb::uitest
