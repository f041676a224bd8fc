#include "engine_worker.h"

#include <QTimer>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "llmwb/chat_prompt.h"
#include "llmwb/errors.h"
#include "llmwb/stats.h"
#include "served_model_name.h"

namespace llmwb::gui {

EngineWorker::EngineWorker(FrameMailbox& mailbox, QObject* parent) : QObject(parent), mailbox_(mailbox) {}

EngineWorker::~EngineWorker() = default;

void EngineWorker::cancel_load(quint64 ticket) {
  quint64 seen = cancelled_up_to_.load();
  while (seen < ticket && !cancelled_up_to_.compare_exchange_weak(seen, ticket)) {
  }
}

void EngineWorker::cancel_experiment() { cancel_experiment_ = true; }

void EngineWorker::cancel_quant_report() { cancel_quant_ = true; }

void EngineWorker::load_model(const EngineConfig& config, quint64 ticket) {
  fail_all("the model was unloaded");
  engine_.reset();  // free the old weights and KV pool before mapping the new ones
  finished_.clear();
  announce_model_to_server();
  mailbox_.drop_telemetry();
  QElapsedTimer since_report;
  since_report.start();
  double last_fraction = -1.0;
  auto progress = [&](double fraction, const std::string& what) {
    // Report at most ~30 times a second: a loader may call back once per tensor.
    if (fraction >= 1.0 || fraction - last_fraction >= 0.01 || since_report.elapsed() > 30) {
      emit load_progress(fraction, QString::fromStdString(what));
      last_fraction = fraction;
      since_report.restart();
    }
    return cancelled_up_to_.load() < ticket;
  };
  try {
    engine_ = std::make_unique<Engine>(config, progress);
  } catch (const std::exception& e) {
    engine_.reset();
    emit load_failed(ticket, QString::fromStdString(e.what()), cancelled_up_to_.load() >= ticket);
    return;
  }
  config_ = engine_->config();
  const ModelInfo& info = engine_->model_info();
  const int vocab = info.tokenizer_vocab > 0 ? info.tokenizer_vocab : info.vocab_size;
  QStringList vocabulary;
  vocabulary.reserve(vocab);
  for (int id = 0; id < vocab; ++id)
    vocabulary << QString::fromStdString(engine_->token_text(id));
  engine_->set_attention_capture(capture_);
  announce_model_to_server();
  emit load_progress(1.0, "loaded");
  emit model_loaded(ticket, info, vocabulary, config_);
}

void EngineWorker::unload_model() {
  fail_all("the model was unloaded");
  engine_.reset();
  announce_model_to_server();
  mailbox_.drop_telemetry();
}

void EngineWorker::submit(const ui::GenerationRequest& request) {
  if (!engine_) return post_failure(request.ticket, "no model is loaded");
  Active a;
  a.ticket = request.ticket;
  a.params = request.params;
  try {
    a.request_id = request.chat                   ? add_chat_request(*engine_, *request.chat, request.chat_format, request.params)
                   : !request.prompt_ids.empty() ? engine_->add_request_tokens(request.prompt_ids, request.params)
                                                 : engine_->add_request(request.prompt, request.params);
  } catch (const std::exception& e) {
    return post_failure(request.ticket, e.what());
  }
  active_.emplace(request.ticket, std::move(a));
  schedule_step();
}

void EngineWorker::post_failure(quint64 ticket, const std::string& error) {
  Active a;
  a.ticket = ticket;
  FrameMailbox::Mail mail;
  mail.deltas.push_back(finish_delta(a, FinishReason::Error, error));
  mailbox_.post(std::move(mail), true);
}

void EngineWorker::count_tokens(const ui::TokenCountRequest& request) {
  QList<int> counts;
  if (engine_) {
    try {
      for (const RenderedChat& chat : request.variants) counts << int(chat_prompt_ids(*engine_, chat).size());
    } catch (const std::exception&) {
      counts.clear();  // the meter shows nothing rather than a wrong count
    }
  }
  emit tokens_counted(request.ticket, counts);
}

void EngineWorker::abort(quint64 ticket) {
  auto it = active_.find(ticket);
  if (it == active_.end()) return;  // already finished
  if (engine_) engine_->abort(it->second.request_id);
  // Reported at once after the tokens so far (the mailbox keeps a generation's deltas in
  // order); later outputs for this request are ignored, so the stop takes effect before the
  // next step.
  FrameMailbox::Mail mail;
  mail.deltas.push_back(finish_delta(it->second, FinishReason::Abort, {}));
  mail.latest = snapshot(true);
  active_.erase(it);
  mailbox_.post(std::move(mail), true);
}

void EngineWorker::pause_generation(quint64 ticket) {
  auto it = active_.find(ticket);
  if (it == active_.end() || !engine_) return;
  engine_->pause(it->second.request_id);
  emit generation_paused(ticket, true);
  schedule_step();   // reports the pause; the others run on
}

void EngineWorker::step_generation(quint64 ticket) {
  auto it = active_.find(ticket);
  if (it == active_.end() || !engine_) return;
  engine_->step_request(it->second.request_id);
  schedule_step();
}

void EngineWorker::resume_generation(quint64 ticket) {
  auto it = active_.find(ticket);
  if (it == active_.end() || !engine_) return;
  engine_->resume(it->second.request_id);
  emit generation_paused(ticket, false);
  schedule_step();
}

void EngineWorker::inspect_token(quint64 ticket, int index) {
  auto it = active_.find(ticket);
  const Active* a = it != active_.end() ? &it->second : nullptr;
  if (!a) {
    auto f = finished_.find(ticket);
    if (f != finished_.end()) a = &f->second;
  }
  if (!engine_ || !a || index < 0 || index >= static_cast<int>(a->token_ids.size()))
    return emit inspect_failed(ticket, index, tr("that token's generation is no longer kept"));
  InspectStepRequest q;
  q.context = a->prompt_ids;
  q.context.insert(q.context.end(), a->token_ids.begin(), a->token_ids.begin() + index);
  q.params = a->params;
  q.seed = a->seed;
  q.prompt_tokens = static_cast<int>(a->prompt_ids.size());
  q.draws_before = a->params.temperature > 0.f ? index : 0;
  try {
    StepInspection s = engine_->inspect_step(q);
    emit step_inspected(ticket, index, s);
  } catch (const std::exception& e) {
    emit inspect_failed(ticket, index, QString::fromStdString(e.what()));
  }
}

void EngineWorker::set_attention_capture(bool on, int layer, int max_queries) {
  if (on) capture_ = AttentionCaptureRequest{layer, max_queries};
  else capture_.reset();
  if (engine_) engine_->set_attention_capture(capture_);
}

void EngineWorker::set_step_delay(int milliseconds) { step_delay_ms_ = std::max(0, milliseconds); }

void EngineWorker::schedule_step() {
  if (step_posted_ || !engine_ || !engine_->has_runnable()) return;
  step_posted_ = true;
  if (step_delay_ms_ > 0)
    QTimer::singleShot(step_delay_ms_, this, &EngineWorker::run_steps);
  else
    QMetaObject::invokeMethod(this, &EngineWorker::run_steps, Qt::QueuedConnection);
}

std::shared_ptr<const StepTelemetry> EngineWorker::snapshot(bool force) {
  // The request is taken even when forced: one snapshot answers it.
  const bool wanted = mailbox_.take_snapshot_request();
  if (!engine_ || !(wanted || force)) return nullptr;
  return std::make_shared<const StepTelemetry>(engine_->telemetry());
}

void EngineWorker::run_steps() {
  step_posted_ = false;
  // Several steps per event-loop turn, for up to kSliceMs: a turn costs the engine thread an
  // event allocation, a wake-up write and a poll, 1-2 % of a 0.25 ms step. Queued calls
  // (abort, new requests) still run between slices, so a stop takes effect within a slice.
  QElapsedTimer slice;
  slice.start();
  do {
    if (!run_step()) return;
  } while (step_delay_ms_ == 0 && slice.elapsed() < kSliceMs);
  schedule_step();
}

void EngineWorker::set_serving(std::shared_ptr<server::RequestQueue> queue) {
  if (serving_ && serving_ != queue) {
    serving_->fail_all(engine_.get(), "the server stopped");
    serving_->set_model({}, false);
  }
  serving_ = std::move(queue);
  announce_model_to_server();
  serve_pending();
}

void EngineWorker::announce_model_to_server() {
  if (!serving_) return;
  if (engine_)
    serving_->set_model(server::served_model_name(config_.model), true, engine_->model_info().context_length);
  else
    serving_->set_model({}, false);
}

void EngineWorker::serve_pending() {
  if (!serving_ || !engine_) return;
  serving_->admit(*engine_);
  schedule_step();
}

bool EngineWorker::run_step() {
  // Server requests join (and cancelled ones leave) between two steps, as in llmwb-cli serve.
  if (serving_ && engine_) serving_->admit(*engine_);
  if (!engine_ || !engine_->has_runnable()) return false;
  StepObserver* const observer = step_observer();
  if (observer) observer->step_started();
  int step_tokens = 0, step_context = 0;
  std::vector<RequestOutput> outputs;
  try {
    outputs = engine_->step();
  } catch (const std::exception& e) {
    fail_all(QString::fromStdString(e.what()));
    return false;
  }
  // The server's outputs go to its clients; the rest are the GUI's.
  if (serving_) outputs = serving_->deliver(std::move(outputs), *engine_);
  FrameMailbox::Mail mail;
  mail.steps.push_back(ui::StepRecord::from(engine_->telemetry()));
  // Delivered at once: the first token (time to first token is what a user watches for), a
  // finish, every step in slow motion (the point is to watch each one) and the last step.
  bool urgent = step_delay_ms_ > 0;
  for (const RequestOutput& out : outputs) {
    auto it = std::find_if(active_.begin(), active_.end(),
                           [&](const auto& kv) { return kv.second.request_id == out.request_id; });
    if (it == active_.end()) continue;  // aborted by the user, already reported
    bool first_token = false;
    ui::TokenDelta d = absorb(it->second, out, first_token);
    if (observer) {
      step_tokens += int(d.token_ids.size());
      step_context = std::max(step_context, d.num_prompt_tokens + d.num_output_tokens);
    }
    urgent = urgent || first_token || d.finished;
    if (d.finished) {
      // Kept a while for the inspector (the last 16 generations).
      finished_[it->first] = std::move(it->second);
      if (finished_.size() > 16) finished_.erase(finished_.begin());
      active_.erase(it);
    }
    if (d.finished || !d.token_ids.empty() || !d.text.empty()) mail.deltas.push_back(std::move(d));
  }
  const bool idle = !engine_->has_runnable();
  urgent = urgent || idle;
  mail.latest = snapshot(urgent);
  // Recorded before the post: a finish the reader receives comes after its last sample.
  if (observer) observer->step_finished(step_tokens, step_context);
  mailbox_.post(std::move(mail), urgent);
  return !idle;
}

ui::TokenDelta EngineWorker::absorb(Active& a, const RequestOutput& out, bool& first_token) {
  ui::TokenDelta d;
  d.ticket = a.ticket;
  a.num_prompt_tokens = int(out.prompt_token_ids.size());
  if (a.prompt_ids.empty()) a.prompt_ids = out.prompt_token_ids;
  if (!out.outputs.empty()) {
    const CompletionOutput& c = out.outputs[0];
    a.token_ids = c.token_ids;
    a.seed = c.seed;
    for (size_t i = a.tokens_seen; i < c.token_ids.size(); ++i) {
      d.token_ids.push_back(c.token_ids[i]);
      d.token_probs.push_back(i < c.token_probs.size() ? c.token_probs[i] : NAN);
      d.token_from_draft.push_back(i < c.token_from_draft.size() ? c.token_from_draft[i] : 0);
      if (d.token_from_draft.back() && i < c.token_text_end.size()) {
        const size_t from = i > 0 ? c.token_text_end[i - 1] : 0, to = c.token_text_end[i];
        if (to <= from) continue;
        if (!a.draft_bytes.empty() && a.draft_bytes.back().second == from) a.draft_bytes.back().second = to;
        else a.draft_bytes.emplace_back(from, to);
      }
    }
    d.speculative = c.speculative;
    a.tokens_seen = c.token_ids.size();
    // The engine's delta as it is: text that could still become a stop string is held back
    // there, so streamed text is never taken back.
    d.text = c.delta;
    a.text += c.delta;
    report_draft_spans(a, d);
    if (!d.token_ids.empty() && !a.first_sent) first_token = a.first_sent = true;
  }
  a.time_to_first_token = out.time_to_first_token;
  a.total_time = out.total_time;
  d.num_prompt_tokens = a.num_prompt_tokens;
  d.num_output_tokens = int(a.tokens_seen);
  d.time_to_first_token = a.time_to_first_token;
  d.total_time = a.total_time;
  if (out.finished || !out.error.empty()) {
    const FinishReason reason = !out.error.empty()    ? FinishReason::Error
                                : out.outputs.empty() ? FinishReason::Stop
                                                      : out.outputs[0].finish_reason;
    ui::TokenDelta f = finish_delta(a, reason, out.error);
    f.token_ids = std::move(d.token_ids);
    f.token_probs = std::move(d.token_probs);
    f.token_from_draft = std::move(d.token_from_draft);
    f.draft_spans = std::move(d.draft_spans);
    f.speculative = std::move(d.speculative);
    f.text = std::move(d.text);
    f.prompt_token_ids = out.prompt_token_ids;
    return f;
  }
  return d;
}

void EngineWorker::report_draft_spans(Active& a, ui::TokenDelta& d) {
  // UTF-16 units of a.text up to `byte` (never before the last one asked: spans ascend).
  auto units_at = [&a](size_t byte) {
    byte = std::min(byte, a.text.size());
    while (a.measured_bytes < byte) {
      const auto lead = static_cast<unsigned char>(a.text[a.measured_bytes]);
      const size_t length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
      a.measured_units += length == 4 ? 2 : 1;  // beyond the BMP: a surrogate pair
      a.measured_bytes += length;
    }
    return a.measured_units;
  };
  size_t done = 0;
  for (auto& [from, to] : a.draft_bytes) {
    if (from >= a.text.size()) break;  // not streamed yet (held back as a possible stop string)
    const int start = units_at(from), end = units_at(to);
    if (end > start) {
      if (!d.draft_spans.empty() && d.draft_spans.back().second == start) d.draft_spans.back().second = end;
      else d.draft_spans.emplace_back(start, end);
    }
    if (to > a.text.size()) {
      from = a.text.size();  // the rest comes with a later delta
      break;
    }
    ++done;
  }
  a.draft_bytes.erase(a.draft_bytes.begin(), a.draft_bytes.begin() + std::ptrdiff_t(done));
}

ui::TokenDelta EngineWorker::finish_delta(const Active& a, FinishReason reason, const std::string& error) const {
  ui::TokenDelta d;
  d.ticket = a.ticket;
  d.finished = true;
  d.finish_reason = reason;
  d.final_text = a.text;
  d.error = error;
  d.num_prompt_tokens = a.num_prompt_tokens;
  d.num_output_tokens = int(a.tokens_seen);
  d.time_to_first_token = a.time_to_first_token;
  d.total_time = a.total_time;
  return d;
}

void EngineWorker::fail_all(const QString& error) {
  FrameMailbox::Mail mail;
  for (auto& [ticket, a] : active_) {
    if (engine_) engine_->abort(a.request_id);
    mail.deltas.push_back(finish_delta(a, FinishReason::Error, error.toStdString()));
  }
  active_.clear();
  if (serving_) serving_->fail_all(engine_.get(), error.toStdString());
  if (!mail.deltas.empty()) mailbox_.post(std::move(mail), true);
}

void EngineWorker::run_experiment(const ui::Experiment& experiment) {
  cancel_experiment_ = false;
  if (!engine_) {
    emit experiment_finished("load a model first: an experiment runs on the loaded model");
    return;
  }
  if (experiment.configs.empty() || experiment.prompts.isEmpty()) {
    emit experiment_finished("an experiment needs at least one configuration and one prompt");
    return;
  }
  for (int i = 0; i < int(experiment.configs.size()); ++i) {
    if (cancel_experiment_) {
      emit experiment_finished("cancelled");
      return;
    }
    emit experiment_result(run_configuration(experiment, i));
  }
  emit experiment_finished({});
}

ui::ExperimentResult EngineWorker::run_configuration(const ui::Experiment& e, int index) {
  using Clock = std::chrono::steady_clock;
  const ui::ExperimentConfig& cfg = e.configs[size_t(index)];
  ui::ExperimentResult result;
  result.config_index = index;
  result.config_name = cfg.name;
  emit experiment_progress(index, "loading " + cfg.name);
  const auto t_load = Clock::now();
  std::unique_ptr<Engine> engine;
  try {
    engine = std::make_unique<Engine>(cfg.apply_to(config_),
                                      [&](double, const std::string&) { return !cancel_experiment_; });
  } catch (const std::exception& ex) {
    result.error = QString::fromStdString(ex.what());
    return result;
  }
  const double load_seconds = std::chrono::duration<double>(Clock::now() - t_load).count();
  emit experiment_progress(index, "running " + cfg.name);

  std::vector<uint64_t> ids;
  try {
    for (const QString& p : e.prompts) ids.push_back(engine->add_request(p.toStdString(), e.sampling_params()));
  } catch (const std::exception& ex) {
    result.error = QString::fromStdString(ex.what());
    return result;
  }
  std::map<uint64_t, RequestOutput> finished;
  double prefill_seconds = 0.0, decode_seconds = 0.0;
  long prefill_tokens = 0, decode_tokens = 0;
  int peak_blocks = 0;
  const auto t_run = Clock::now();
  try {
    while (engine->has_unfinished() && !cancel_experiment_) {
      for (auto& out : engine->step())
        if (out.finished) finished[out.request_id] = std::move(out);
      const StepTelemetry& t = engine->telemetry();
      // A mixed step's time is split by token share: prefill and decode rates stay comparable
      // across configurations whose batch limits mix them differently.
      const int tokens = t.num_prefill_tokens + t.num_decode_tokens;
      if (tokens > 0) {
        prefill_seconds += t.step_seconds * t.num_prefill_tokens / tokens;
        decode_seconds += t.step_seconds * t.num_decode_tokens / tokens;
      }
      prefill_tokens += t.num_prefill_tokens;
      // Emitted tokens: a speculating step's decode tokens also count the guesses it scored.
      decode_tokens += t.num_decode_seqs + long(t.speculative_step.accepted);
      peak_blocks = std::max(peak_blocks, t.blocks_used);
    }
  } catch (const std::exception& ex) {
    result.error = QString::fromStdString(ex.what());
    return result;
  }
  if (cancel_experiment_) {
    result.error = "cancelled";
    return result;
  }
  const double run_seconds = std::chrono::duration<double>(Clock::now() - t_run).count();
  double ttft_sum = 0.0, tpot_sum = 0.0;
  int tpot_n = 0;
  long output_tokens = 0;
  for (uint64_t id : ids) {
    const RequestOutput& out = finished[id];
    const CompletionOutput c = out.outputs.empty() ? CompletionOutput{} : out.outputs[0];
    result.token_ids.push_back(c.token_ids);
    result.texts.push_back(out.error.empty() ? c.text : "[error] " + out.error);
    ttft_sum += out.time_to_first_token;
    output_tokens += long(c.token_ids.size());
    if (c.token_ids.size() > 1) {
      tpot_sum += time_per_output_token(out.total_time, out.time_to_first_token, c.token_ids.size());
      ++tpot_n;
    }
  }
  const StepTelemetry& t = engine->telemetry();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double mib = 1024.0 * 1024.0;
  result.metrics = {
      {"output tok/s", run_seconds > 0 ? double(output_tokens) / run_seconds : nan},
      {"decode tok/s", decode_seconds > 0 ? double(decode_tokens) / decode_seconds : nan},
      {"prefill tok/s", prefill_seconds > 0 ? double(prefill_tokens) / prefill_seconds : nan},
      {"TTFT ms", ids.empty() ? nan : 1000.0 * ttft_sum / double(ids.size())},
      {"TPOT ms", tpot_n ? 1000.0 * tpot_sum / tpot_n : nan},
      {"total s", run_seconds},
      {"load s", load_seconds},
      {"output tokens", double(output_tokens)},
      {"weights MiB", double(engine->model_info().weight_bytes) / mib},
      {"KV pool MiB", double(t.kv_bytes_total) / mib},   // of the config's kv_dtype (its own column)
      {"peak KV blocks", double(peak_blocks)},
      {"preemptions", double(t.preemptions_total)},
      {"prefix hit tokens", double(t.prefix_cache_hit_tokens_total)},
  };
  // Speculation's columns in every row (NaN where off), so that configurations compare.
  const bool spec = !t.speculative_method.empty();
  result.metrics.push_back({"acceptance %", spec ? 100.0 * t.speculative_total.acceptance_rate() : nan});
  result.metrics.push_back({"mean acceptance length", spec ? t.speculative_total.mean_acceptance_length() : nan});
  engine.reset();  // the accuracy run loads the model twice more: free this copy first
  if (e.accuracy) add_accuracy_metrics(e, cfg, result);
  return result;
}

QuantReport EngineWorker::quant_report_for_loaded_model(QuantReportOptions o) const {
  o.model_path = config_.model;
  o.tokenizer_path = config_.tokenizer;
  return make_quant_report(o);
}

void EngineWorker::add_accuracy_metrics(const ui::Experiment& e, const ui::ExperimentConfig& cfg,
                                        ui::ExperimentResult& result) {
  emit experiment_progress(result.config_index, "measuring accuracy of " + cfg.name);
  QuantReportOptions o;
  o.scheme = cfg.quantize.toStdString();   // "": the stored weights, the baseline row
  o.text = builtin_quant_eval_text();
  o.text_name = "(built-in sample)";
  o.threads = cfg.threads;
  o.greedy_tokens = std::max(1, e.max_tokens);
  o.tensor_errors = false;   // the per-tensor view is the quantization tab's
  o.progress = [this](double, const std::string&) { return !cancel_experiment_; };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // NaN (shown as "–") when the measurement fails, so the columns of every row still line up.
  std::vector<std::pair<QString, double>> figures = {
      {"perplexity", nan}, {"ppl vs stored %", nan}, {"KL vs stored", nan}, {"greedy agree %", nan}};
  try {
    const QuantReport r = quant_report_for_loaded_model(o);
    figures[0].second = r.text.ppl_quant;
    figures[1].second = 100.0 * (r.text.ppl_quant / r.text.ppl_ref - 1.0);
    figures[2].second = r.text.kl_mean;
    if (r.greedy.n_tokens > 0) figures[3].second = 100.0 * r.greedy.n_same / r.greedy.n_tokens;
  } catch (const std::exception& ex) {
    result.error = cancel_experiment_ ? QString("cancelled") : QString::fromStdString(ex.what());
  }
  // Next to the speed columns, with the weight size: F32 / INT8 / INT4 side by side read as
  // "this fast, this small, this accurate".
  auto& m = result.metrics;
  auto weights = std::find_if(m.begin(), m.end(), [](const auto& kv) { return kv.first == "weights MiB"; });
  if (weights != m.end()) {
    figures.insert(figures.begin(), *weights);
    m.erase(weights);
  }
  auto after = std::find_if(m.begin(), m.end(), [](const auto& kv) { return kv.first == "decode tok/s"; });
  m.insert(after == m.end() ? m.end() : after + 1, figures.begin(), figures.end());
}

void EngineWorker::run_quant_report(const QuantReportOptions& options) {
  cancel_quant_ = false;
  if (!engine_) {
    emit quant_report_failed("load a model first: the report measures the loaded model", false);
    return;
  }
  QElapsedTimer since_report;
  since_report.start();
  double last_fraction = -1.0;
  QuantReportOptions o = options;
  if (o.threads <= 0) o.threads = config_.threads;
  o.progress = [&](double fraction, const std::string& what) {
    // A signal at most ~30 times a second; the cancel flag is read at every call.
    if (fraction >= 1.0 || fraction - last_fraction >= 0.02 || since_report.elapsed() > 30) {
      emit quant_progress(fraction, QString::fromStdString(what));
      last_fraction = fraction;
      since_report.restart();
    }
    return !cancel_quant_;
  };
  try {
    const QuantReport r = quant_report_for_loaded_model(o);
    emit quant_report_ready(r);
  } catch (const std::exception& e) {
    emit quant_report_failed(cancel_quant_ ? QString("cancelled") : QString::fromStdString(e.what()), cancel_quant_);
  }
}

}  // namespace llmwb::gui
