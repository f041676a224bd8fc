// workbench.h — the application assembled: the MainWindow in the GUI thread, the EngineWorker
// in its own QThread, the FrameMailbox that carries generation results back, and the queued
// connections between them. main.cpp, the screenshot mode
// and the UI tests all build the application through this one class.
#pragma once

#include <QObject>
#include <QPointer>
#include <QThread>

#include <memory>
#include <vector>

#include "engine_worker.h"
#include "experiments_view.h"
#include "live_view.h"
#include "main_window.h"
#include "server_controller.h"

namespace llmwb::gui {

class Workbench : public QObject {
  Q_OBJECT

 public:
  Workbench();
  ~Workbench() override;

  ui::MainWindow& window() { return *window_; }
  EngineWorker& worker() { return *worker_; }
  // The Server panel's OpenAI-compatible server, stepped by the worker.
  ServerController& server() { return *server_; }
  // Where token deltas and telemetry arrive, in the GUI thread, at most once per frame.
  FrameMailbox& mailbox() { return mailbox_; }
  // The mailbox's interval while no live view is on screen: the text panes' pace. With one on
  // screen, the screen's frame interval (FramePacer::frame_interval_ms).
  static constexpr int kTextIntervalMs = 33;

 private:
  void update_delivery_interval();

  FrameMailbox mailbox_;  // declared first: destroyed after the worker that posts to it
  QThread thread_;
  EngineWorker* worker_;  // lives in thread_; deleted after the thread has stopped
  std::unique_ptr<ui::MainWindow> window_;
  std::vector<QPointer<ui::LiveView>> live_views_;
  std::unique_ptr<ServerController> server_;   // stopped first in the destructor
};

}  // namespace llmwb::gui
