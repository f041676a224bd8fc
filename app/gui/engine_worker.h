// engine_worker.h — the Engine in its own thread.
//
// EngineWorker is a QObject moved to a dedicated QThread. It owns the llmwb::Engine and runs
// its step loop in slices (steps back to back for up to kSliceMs, one slice per event-loop
// turn), so requests, aborts and configuration changes (queued slot calls) are handled
// between two slices: an abort is honoured within a slice. Token deltas and telemetry leave
// through a FrameMailbox (frame_mailbox.h): the engine thread appends each step's results to
// it and the GUI thread empties it at most once per frame, so a fast model neither floods the GUI thread nor pays a queued signal per step.
// Everything else (load progress, experiments, quantization reports) leaves as queued
// signals. The GUI thread never runs a forward pass.
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QStringList>

#include <atomic>
#include <map>
#include <memory>
#include <optional>

#include "llmwb/engine.h"
#include "llmwb/quant_report.h"
#include "frame_mailbox.h"
#include "request_queue.h"
#include "meta_types.h"
#include "step_observer.h"

namespace llmwb::gui {

class EngineWorker : public QObject {
  Q_OBJECT

 public:
  // `mailbox` (living in the GUI thread, outliving the worker) receives the generation results.
  explicit EngineWorker(FrameMailbox& mailbox, QObject* parent = nullptr);
  ~EngineWorker() override;

  // Thread-safe (plain calls from the GUI thread): a model load or an experiment in progress
  // stops at its next progress report / step. Loads are numbered by the caller; cancelling
  // `ticket` cancels that load and every earlier one, whether it has started yet or not.
  void cancel_load(quint64 ticket);
  void cancel_experiment();
  void cancel_quant_report();
  // A harness's per-step observer (the GUI benchmark's A/B mode); null, the default, for none.
  // Set only while no generation runs.
  void set_step_observer(StepObserver* observer) { observer_.store(observer, std::memory_order_release); }
  StepObserver* step_observer() const { return observer_.load(std::memory_order_acquire); }

  // The Server panel's requests (server/request_queue.h), in the worker thread (invoke queued):
  // from now on they share this engine's steps with the GUI's own; null stops serving (what is
  // in flight fails). serve_pending() admits newly queued ones and steps (the queue's wakeup).
  void set_serving(std::shared_ptr<server::RequestQueue> queue);
  void serve_pending();

 public slots:
  void load_model(const llmwb::EngineConfig& config, quint64 ticket);
  // Frees the model (a load the user cancelled after it had already finished).
  void unload_model();
  void submit(const llmwb::ui::GenerationRequest& request);
  void abort(quint64 ticket);
  // The token inspector: hold a generation (its KV blocks stay), let it make one more token,
  // let it run again.
  void pause_generation(quint64 ticket);
  void step_generation(quint64 ticket);
  void resume_generation(quint64 ticket);
  // Records the step that produced generated token `index` of generation `ticket` (running,
  // paused or one of the last finished ones): step_inspected or inspect_failed answers.
  void inspect_token(quint64 ticket, int index);
  // The chat's context meter: each variant's prompt tokens as a request would have them
  // (chat_prompt_ids); answered through tokens_counted, empty when no model is loaded.
  void count_tokens(const llmwb::ui::TokenCountRequest& request);
  // Attention weights are captured only while a view shows them (capture costs a copy per step).
  void set_attention_capture(bool on, int layer, int max_queries);
  // Slow motion for watching the engine work: a pause between steps (0 = none). The event
  // loop runs during the pause, so aborts still arrive between steps.
  void set_step_delay(int milliseconds);
  // Runs `experiment` configuration after configuration on fresh engines for the loaded model.
  void run_experiment(const llmwb::ui::Experiment& experiment);
  // Measures what a quantization scheme costs the loaded model (llmwb::make_quant_report on
  // its file, with the loaded model's tokenizer and thread count); `options` supplies the
  // scheme and the evaluation text. Progress, the report or the failure come back as signals.
  void run_quant_report(const llmwb::QuantReportOptions& options);

 signals:
  void load_progress(double fraction, const QString& what);
  void model_loaded(quint64 ticket, const llmwb::ModelInfo& info, const QStringList& vocabulary,
                    const llmwb::EngineConfig& config);
  void load_failed(quint64 ticket, const QString& error, bool cancelled);
  void experiment_progress(int config_index, const QString& what);
  void experiment_result(const llmwb::ui::ExperimentResult& result);
  void experiment_finished(const QString& error);
  void quant_progress(double fraction, const QString& what);
  void quant_report_ready(const llmwb::QuantReport& report);
  void quant_report_failed(const QString& error, bool cancelled);
  void generation_paused(quint64 ticket, bool paused);
  void step_inspected(quint64 ticket, int index, const llmwb::StepInspection& inspection);
  void inspect_failed(quint64 ticket, int index, const QString& error);
  void tokens_counted(quint64 ticket, const QList<int>& counts);

 private:
  struct Active {
    quint64 ticket = 0;
    uint64_t request_id = 0;
    size_t tokens_seen = 0;     // tokens already put into a delta
    std::string text;           // cumulative text as last reported
    // Accepted draft tokens' text not reported yet (bytes of the engine's text), and how far
    // `text` has been measured in UTF-16 code units (bytes, units).
    std::vector<std::pair<size_t, size_t>> draft_bytes;
    size_t measured_bytes = 0;
    int measured_units = 0;
    int num_prompt_tokens = 0;
    double time_to_first_token = 0.0, total_time = 0.0;  // as last reported
    bool first_sent = false;
    // What the token inspector needs to record any of its steps again.
    std::vector<int> prompt_ids, token_ids;
    SamplingParams params;
    uint64_t seed = 0;
  };

  // Longest run of back-to-back steps between two turns of the worker's event loop.
  static constexpr int kSliceMs = 2;

  void schedule_step();
  void run_steps();
  // One engine step, its results posted; false when no work is left (or the step failed).
  bool run_step();
  // The step's news for `a` as a delta (no tokens if none, finished if the request ended);
  // `first_token` is set when it carries the generation's first token. Erases nothing.
  ui::TokenDelta absorb(Active& a, const RequestOutput& out, bool& first_token);
  // Moves a's accepted draft text that its streamed text now holds into d.draft_spans, as
  // UTF-16 offsets.
  static void report_draft_spans(Active& a, ui::TokenDelta& d);
  void fail_all(const QString& error);
  // Posts a finished delta for a generation that never reached the engine.
  void post_failure(quint64 ticket, const std::string& error);
  ui::TokenDelta finish_delta(const Active& a, FinishReason reason, const std::string& error) const;
  // The newest full telemetry snapshot when the GUI asked for one (or `force`), else null.
  std::shared_ptr<const StepTelemetry> snapshot(bool force);
  ui::ExperimentResult run_configuration(const ui::Experiment& e, int index);
  // Accuracy of one experiment configuration against the stored weights (appended metrics).
  void add_accuracy_metrics(const ui::Experiment& e, const ui::ExperimentConfig& cfg, ui::ExperimentResult& result);
  // make_quant_report for the loaded model: its path, tokenizer and threads filled in.
  QuantReport quant_report_for_loaded_model(QuantReportOptions o) const;

  FrameMailbox& mailbox_;
  std::unique_ptr<Engine> engine_;
  EngineConfig config_;
  std::map<quint64, Active> active_;  // by ticket
  std::map<quint64, Active> finished_;  // the last few finished generations, for the inspector
  bool step_posted_ = false;
  int step_delay_ms_ = 0;
  std::optional<AttentionCaptureRequest> capture_;
  std::atomic<quint64> cancelled_up_to_{0};
  std::atomic<bool> cancel_experiment_{false};
  std::atomic<bool> cancel_quant_{false};
  std::atomic<StepObserver*> observer_{nullptr};
  std::shared_ptr<server::RequestQueue> serving_;
  // The server's view of the model: its name and context, or not ready.
  void announce_model_to_server();
};

}  // namespace llmwb::gui
