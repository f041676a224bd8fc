#include "server_controller.h"

#include "llmwb/errors.h"

namespace llmwb::gui {

ServerController::ServerController(EngineWorker& worker, ui::ServerView& view, QObject* parent)
    : QObject(parent), worker_(worker), view_(view) {
  connect(&view_, &ui::ServerView::start_requested, this, &ServerController::start);
  connect(&view_, &ui::ServerView::stop_requested, this, &ServerController::stop);
  refresh_.setInterval(250);
  connect(&refresh_, &QTimer::timeout, this, &ServerController::refresh);
}

ServerController::~ServerController() { stop(); }

void ServerController::start(const QString& host, int port, const QString& api_key) {
  if (http_) return;
  server::ServerConfig sc;
  sc.host = host.isEmpty() ? "127.0.0.1" : host.toStdString();
  sc.port = port;
  sc.api_key = api_key.toStdString();
  auto queue = std::make_shared<server::RequestQueue>(sc.max_queue);
  // From an HTTP thread: the worker admits the request at its next turn.
  EngineWorker* w = &worker_;
  queue->set_wakeup([w] { QMetaObject::invokeMethod(w, [w] { w->serve_pending(); }, Qt::QueuedConnection); });
  auto http = std::make_unique<server::HttpServer>(*queue, sc);
  try {
    http->start();
  } catch (const std::exception& e) {
    view_.set_stopped(QString::fromStdString(e.what()));
    return;
  }
  queue_ = queue;
  http_ = std::move(http);
  QMetaObject::invokeMethod(w, [w, queue] { w->set_serving(queue); }, Qt::QueuedConnection);
  view_.set_running(QString::fromStdString(http_->address()));
  refresh_.start();
}

void ServerController::stop() {
  if (!http_) return;
  http_->stop();   // no handler runs after this: nothing submits any more
  http_.reset();
  EngineWorker* w = &worker_;
  QMetaObject::invokeMethod(w, [w] { w->set_serving(nullptr); }, Qt::QueuedConnection);
  refresh();
  refresh_.stop();
  queue_.reset();
  view_.set_stopped();
}

void ServerController::refresh() {
  if (!queue_) return;
  QVector<ui::ServerRequestRow> rows;
  for (const server::RequestRow& r : queue_->rows()) {
    ui::ServerRequestRow v;
    v.serial = r.serial;
    v.endpoint = QString::fromStdString(r.endpoint);
    v.state = QString::fromStdString(r.state);
    v.prompt_tokens = qint64(r.prompt_tokens);
    v.completion_tokens = qint64(r.completion_tokens);
    v.ttft_seconds = r.ttft;
    v.tokens_per_second = r.tokens_per_second;
    rows.push_back(v);
  }
  view_.set_rows(rows);
}

}  // namespace llmwb::gui
