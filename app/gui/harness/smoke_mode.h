// smoke_mode.h — `llmwb --smoke-test [--model PATH]`: the installed application proving itself
// in one run, as the package check does (tests/package/check-package.sh): open the model
// (the installed demo by default), generate a few greedy tokens in the Completion view, render
// every view once, print one line and exit 0; any failure exits 1 with the reason on stderr.
// Works without a display (QT_QPA_PLATFORM=offscreen) and under Xvfb.
#pragma once

#include <QObject>
#include <QString>
#include <functional>

#include "workbench.h"

namespace llmwb::gui {

class SmokeMode : public QObject {
  Q_OBJECT

 public:
  SmokeMode(Workbench& bench, QString model, QString tokenizer);
  // Starts the run; the application exits with its result.
  void start();

 private:
  void on_model_ready();
  bool render_every_view();
  void fail(const QString& why);
  // Runs the event loop until `done` holds or `seconds` pass; false on timeout.
  static bool wait_for(const std::function<bool()>& done, double seconds);

  Workbench& bench_;
  QString model_, tokenizer_;
  bool finished_ = false;
};

}  // namespace llmwb::gui
