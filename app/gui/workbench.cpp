#include "workbench.h"

#include <algorithm>
#include <limits>

#include "completion_view.h"
#include "kv_block_grid.h"
#include "kv_block_map.h"
#include "step_inspector_view.h"
#include "chat_view.h"
#include "quant_view.h"
#include "server_view.h"

namespace llmwb::gui {

Workbench::Workbench() : mailbox_(kTextIntervalMs), worker_(new EngineWorker(mailbox_)), window_(std::make_unique<ui::MainWindow>()) {
  ui::register_meta_types();
  thread_.setObjectName("llmwb-engine");
  worker_->moveToThread(&thread_);
  ui::MainWindow* w = window_.get();
  EngineWorker* e = worker_;
  // GUI -> engine: queued, so each call runs in the worker thread between two steps.
  connect(w, &ui::MainWindow::load_requested, e, &EngineWorker::load_model, Qt::QueuedConnection);
  connect(w, &ui::MainWindow::unload_requested, e, &EngineWorker::unload_model, Qt::QueuedConnection);
  connect(w, &ui::MainWindow::generate_requested, e, &EngineWorker::submit, Qt::QueuedConnection);
  connect(w, &ui::MainWindow::abort_requested, e, &EngineWorker::abort, Qt::QueuedConnection);
  connect(w, &ui::MainWindow::attention_capture_requested, e, &EngineWorker::set_attention_capture,
          Qt::QueuedConnection);
  connect(w, &ui::MainWindow::step_delay_requested, e, &EngineWorker::set_step_delay, Qt::QueuedConnection);
  connect(w, &ui::MainWindow::experiment_requested, e, &EngineWorker::run_experiment, Qt::QueuedConnection);
  connect(w, &ui::MainWindow::quant_report_requested, e, &EngineWorker::run_quant_report, Qt::QueuedConnection);
  // Cancellation must reach a worker that is busy loading or experimenting, so it sets an
  // atomic flag directly from the GUI thread instead of waiting in the queue.
  connect(w, &ui::MainWindow::cancel_load_requested, w, [e](quint64 ticket) { e->cancel_load(ticket); });
  connect(w, &ui::MainWindow::cancel_experiment_requested, w, [e] { e->cancel_experiment(); });
  connect(w, &ui::MainWindow::cancel_quant_report_requested, w, [e] { e->cancel_quant_report(); });
  // Engine -> GUI: queued into the GUI thread.
  connect(e, &EngineWorker::load_progress, w, &ui::MainWindow::on_load_progress, Qt::QueuedConnection);
  connect(e, &EngineWorker::model_loaded, w, &ui::MainWindow::on_model_loaded, Qt::QueuedConnection);
  connect(e, &EngineWorker::load_failed, w, &ui::MainWindow::on_load_failed, Qt::QueuedConnection);
  // Generation results: emitted in the GUI thread by the mailbox, at most once per frame.
  connect(&mailbox_, &FrameMailbox::tokens, w, &ui::MainWindow::on_tokens);
  connect(&mailbox_, &FrameMailbox::telemetry, w, &ui::MainWindow::on_telemetry);
  ui::ChatView* chat = w->chat_view();
  connect(chat, &ui::ChatView::count_requested, e, &EngineWorker::count_tokens, Qt::QueuedConnection);
  connect(e, &EngineWorker::tokens_counted, chat, &ui::ChatView::on_tokens_counted, Qt::QueuedConnection);
  ui::ExperimentsView* x = w->experiments_view();
  connect(e, &EngineWorker::experiment_progress, x, &ui::ExperimentsView::on_progress, Qt::QueuedConnection);
  connect(e, &EngineWorker::experiment_result, x, &ui::ExperimentsView::on_result, Qt::QueuedConnection);
  connect(e, &EngineWorker::experiment_finished, x, &ui::ExperimentsView::on_finished, Qt::QueuedConnection);
  // The token inspector (Completion view): pause / step / resume, and a step recorded on demand.
  ui::CompletionView* c = w->completion_view();
  connect(c, &ui::CompletionView::pause_requested, e, &EngineWorker::pause_generation, Qt::QueuedConnection);
  connect(c, &ui::CompletionView::step_requested, e, &EngineWorker::step_generation, Qt::QueuedConnection);
  connect(c, &ui::CompletionView::resume_requested, e, &EngineWorker::resume_generation, Qt::QueuedConnection);
  connect(c, &ui::CompletionView::inspect_requested, e, &EngineWorker::inspect_token, Qt::QueuedConnection);
  connect(e, &EngineWorker::generation_paused, c, &ui::CompletionView::on_paused, Qt::QueuedConnection);
  connect(e, &EngineWorker::step_inspected, c, &ui::CompletionView::on_step_inspected, Qt::QueuedConnection);
  connect(e, &EngineWorker::inspect_failed, c, &ui::CompletionView::on_inspect_failed, Qt::QueuedConnection);
  connect(c->inspector(), &ui::StepInspectorView::blocks_read, w->kv_map()->grid(), &ui::KvBlockGrid::set_highlighted);
  // The Chat view holds and steps its reply the same way.
  connect(chat, &ui::ChatView::pause_requested, e, &EngineWorker::pause_generation, Qt::QueuedConnection);
  connect(chat, &ui::ChatView::step_requested, e, &EngineWorker::step_generation, Qt::QueuedConnection);
  connect(chat, &ui::ChatView::resume_requested, e, &EngineWorker::resume_generation, Qt::QueuedConnection);
  connect(e, &EngineWorker::generation_paused, chat, &ui::ChatView::on_paused, Qt::QueuedConnection);
  ui::QuantView* q = w->quant_view();
  connect(e, &EngineWorker::quant_progress, q, &ui::QuantView::on_progress, Qt::QueuedConnection);
  connect(e, &EngineWorker::quant_report_ready, q, &ui::QuantView::on_report, Qt::QueuedConnection);
  connect(e, &EngineWorker::quant_report_failed, q, &ui::QuantView::on_failed, Qt::QueuedConnection);
  // Results reach the GUI thread every screen frame while a live chart is on screen to draw
  // them, else at the text's pace; text goes at its pace either way.
  mailbox_.set_text_interval_ms(kTextIntervalMs);
  for (ui::LiveView* v : w->findChildren<ui::LiveView*>()) {
    live_views_.push_back(v);
    connect(v, &ui::LiveView::on_screen_toggled, this, &Workbench::update_delivery_interval);
  }
  server_ = std::make_unique<ServerController>(*worker_, *w->server_view());
  thread_.start();
}

void Workbench::update_delivery_interval() {
  const bool charts = std::any_of(live_views_.begin(), live_views_.end(),
                                  [](const QPointer<ui::LiveView>& v) { return v && v->on_screen(); });
  const int ms = charts ? ui::FramePacer::frame_interval_ms(window_->screen()) : kTextIntervalMs;
  mailbox_.set_frame_interval_ms(ms);
}

Workbench::~Workbench() {
  server_.reset();   // joins the HTTP threads while the worker still runs
  // The window's views hide as it is destroyed, after live_views_ (declared after it).
  for (const QPointer<ui::LiveView>& v : live_views_)
    if (v) disconnect(v, nullptr, this, nullptr);
  worker_->cancel_load(std::numeric_limits<quint64>::max());
  worker_->cancel_experiment();
  worker_->cancel_quant_report();
  thread_.quit();
  thread_.wait();
  delete worker_;  // the thread has stopped: no event of the worker's can still run
}

}  // namespace llmwb::gui
