// screenshot_mode.h — `llmwb --model PATH --screenshot-dir DIR`: open the model, run a short
// greedy generation, write a PNG of every main view into DIR, exit. Works without a display
// (QT_QPA_PLATFORM=offscreen) and under Xvfb; CI runs it and people look at the pictures.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>

#include "workbench.h"

namespace llmwb::gui {

class ScreenshotMode : public QObject {
  Q_OBJECT

 public:
  ScreenshotMode(Workbench& bench, QString model, QString tokenizer, QString dir);
  // Starts the sequence; the application quits with 0 when all pictures are written, 1 on
  // any failure (reported on stderr).
  void start();
  const QStringList& written() const { return written_; }

 private:
  void on_model_ready();
  void on_completion_running();
  void on_completion_done();
  void on_chat_done();
  void on_experiment_done();
  // Speculative decoding: the model opened again with self-int4 proposing, a chat turn with
  // its accepted draft tokens marked, and the timeline's speculation rows and chart.
  void start_speculative_chat();
  void on_speculative_model_ready();
  // The model reopened with TP 2 x PP 2 (Settings ▸ Parallelism), a generation, the
  // Parallelism view. The layout is applied without saving it as the user's.
  void capture_parallelism();
  void capture_settings();
  void on_parallel_model_ready();
  void finish();
  bool capture(const QString& name);
  void fail(const QString& why);
  // Runs the event loop until `done` holds or `seconds` pass; false on timeout.
  bool wait_for(const std::function<bool()>& done, double seconds);

  Workbench& bench_;
  QString model_, tokenizer_, dir_;
  QStringList written_;
};

}  // namespace llmwb::gui
