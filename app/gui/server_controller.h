// server_controller.h — the Server panel's server: an HttpServer (server/http_server.h) whose
// RequestQueue the EngineWorker steps with the GUI's own requests, so server traffic shows in
// the KV map and the throughput charts and the GUI thread never waits on it. Lives in the GUI
// thread; refreshes the panel's request list a few times a second while serving.
#pragma once

#include <QObject>
#include <QTimer>

#include <memory>

#include "engine_worker.h"
#include "http_server.h"
#include "request_queue.h"
#include "server_view.h"

namespace llmwb::gui {

class ServerController : public QObject {
  Q_OBJECT

 public:
  ServerController(EngineWorker& worker, ui::ServerView& view, QObject* parent = nullptr);
  ~ServerController() override;

  bool running() const { return http_ != nullptr; }
  int port() const { return http_ ? http_->port() : 0; }

 public slots:
  void start(const QString& host, int port, const QString& api_key);
  void stop();

 private:
  void refresh();

  EngineWorker& worker_;
  ui::ServerView& view_;
  std::shared_ptr<server::RequestQueue> queue_;
  std::unique_ptr<server::HttpServer> http_;
  QTimer refresh_;
};

}  // namespace llmwb::gui
