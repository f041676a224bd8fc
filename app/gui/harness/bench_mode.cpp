#include "bench_mode.h"

#include <QApplication>
#include <QDockWidget>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPaintEvent>
#include <QPlainTextEdit>
#include <QScreen>
#include <QSettings>
#include <QStandardPaths>
#include <QTextStream>
#include <QTimer>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "chat_view.h"
#include "completion_view.h"
#include "llmwb/engine.h"
#include "llmwb/errors.h"
#include "sampling_params_editor.h"
#include "thread_cpu.h"
#include "throughput_chart.h"

namespace llmwb::gui {

QString bench_markdown_answer() {
  QString md;
  for (int i = 1; md.size() < 12000; ++i) {
    md += QString("## Part %1: what the engine does\n\n").arg(i);
    md += "The scheduler picks the **waiting** requests, the runner computes one step and the "
          "`sampler` draws a token; see [the docs](https://example.com/docs) for details.\n\n";
    md += "- prefill the prompt in chunks\n- decode one token per sequence\n- free the KV blocks at the end\n\n";
    md += "| Stage | Cost | Notes |\n|---|---:|---|\n| prefill | 12.5 ms | batched |\n| decode | 0.25 ms | per token |\n\n";
    md += "```cpp\nfor (int step = 0; step < steps; ++step) {\n  engine.step();\n  report(step);\n}\n```\n\n";
  }
  return md;
}

namespace {

SamplingParams bench_params(const BenchOptions& o) {
  SamplingParams p;
  p.temperature = 0.0f;  // greedy: every run generates the same tokens
  p.max_tokens = o.max_tokens;
  return p;
}

QJsonObject threads_json(const std::map<std::string, double>& cpu) {
  QJsonObject o;
  for (const auto& [name, seconds] : cpu) o[QString::fromStdString(name)] = seconds;
  return o;
}

// The fields both modes print, so that a script can pair them.
QJsonObject result_json(const QString& mode, const BenchOptions& o, int threads, long tokens, double engine_seconds,
                        double main_cpu, double wall, const std::map<std::string, double>& cpu) {
  QJsonObject j;
  j["mode"] = mode;
  j["model"] = o.model;
  j["threads"] = threads;
  j["generations"] = o.generations;
  j["tokens"] = double(tokens);
  j["engine_seconds"] = engine_seconds;
  j["tok_s"] = engine_seconds > 0 ? double(tokens) / engine_seconds : 0.0;
  j["wall_seconds"] = wall;
  j["main_thread_cpu_s"] = main_cpu;
  j["main_thread_cpu_ms_per_1k_tokens"] = tokens > 0 ? 1e6 * main_cpu / double(tokens) : 0.0;
  double total = 0.0;
  for (const auto& [name, seconds] : cpu) total += seconds;
  j["process_cpu_s"] = total;
  j["thread_cpu_s"] = threads_json(cpu);
  return j;
}

void print_json(const QJsonObject& j) {
  QTextStream(stdout) << QJsonDocument(j).toJson(QJsonDocument::Compact) << "\n";
}

}  // namespace

int run_headless_bench(const BenchOptions& options) {
  ui::AppSettings settings;
  settings.threads = options.threads;
  const EngineConfig cfg = settings.engine_config(options.model, options.tokenizer);
  try {
    Engine engine(cfg);
    const SamplingParams params = bench_params(options);
    long tokens = 0;
    double engine_seconds = 0.0, cpu0 = 0.0, wall0 = 0.0;
    std::map<std::string, double> threads0;
    for (int g = -1; g < options.generations; ++g) {  // g = -1: the warm-up
      if (g == 0) {
        cpu0 = this_thread_cpu_seconds();
        wall0 = StepLog::now();
        threads0 = thread_cpu_by_name();
      }
      engine.add_request("", params);
      while (engine.has_unfinished()) {
        for (const RequestOutput& out : engine.step()) {
          if (!out.error.empty()) throw Error("generation", out.error);
          if (!out.finished || g < 0) continue;
          tokens += out.outputs.empty() ? 0 : long(out.outputs[0].token_ids.size());
          engine_seconds += out.total_time;
        }
      }
    }
    const double main_cpu = this_thread_cpu_seconds() - cpu0;
    print_json(result_json("headless", options, cfg.threads, tokens, engine_seconds, main_cpu,
                           StepLog::now() - wall0, cpu_difference(threads0, thread_cpu_by_name())));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "llmwb --bench-gui: %s\n", e.what());
    return 1;
  }
}

int run_gui_bench(const BenchOptions& options) {
  // A benchmark neither reads nor changes the user's settings and window layout.
  QStandardPaths::setTestModeEnabled(true);
  QSettings().clear();
  Workbench bench;
  BenchMode mode(bench, options);
  QObject::connect(&mode, &BenchMode::finished, &mode, [](const QJsonObject& j) {
    print_json(j);
    QApplication::exit(0);
  });
  QObject::connect(&mode, &BenchMode::failed, &mode, [](const QString& why) {
    QTextStream(stderr) << "llmwb --bench-gui: " << why << "\n";
    QApplication::exit(1);
  });
  QTimer::singleShot(0, &mode, &BenchMode::start);
  return QApplication::exec();
}

BenchMode::BenchMode(Workbench& bench, BenchOptions options) : bench_(bench), options_(std::move(options)) {
  phase_timer_.setTimerType(Qt::PreciseTimer);
  phase_timer_.setSingleShot(true);
  connect(&phase_timer_, &QTimer::timeout, this, &BenchMode::on_phase_timer);
  // A quiet phase ends early when a generation finishes in it: the finish waits in the held
  // mailbox and the engine would only sit idle until the next generation starts.
  connect(&bench_.mailbox(), &FrameMailbox::finish_held, this, [this] {
    if (phase_timer_.isActive() && !phases_.empty() && !phases_.back().live) switch_phase();
  });
}

void BenchMode::start() {
  ui::MainWindow& w = bench_.window();
  ui::AppSettings s = w.settings();
  s.threads = options_.threads;
  s.step_delay_ms = 0;
  w.set_settings(s);
  w.resize(1440, 920);
  w.show();
  w.show_view(options_.chat.isEmpty() ? ui::MainWindow::View::Completion : ui::MainWindow::View::Chat);
  if (!options_.chat.isEmpty() && options_.chat != "text" && options_.chat != "markdown")
    return fail("--bench-chat: '" + options_.chat + "' is not text or markdown");
  if (options_.chat == "markdown") {
    markdown_ = bench_markdown_answer();
    disconnect(&bench_.mailbox(), &FrameMailbox::tokens, &w, &ui::MainWindow::on_tokens);
    connect(&bench_.mailbox(), &FrameMailbox::tokens, this, &BenchMode::deliver_tokens);
  }
  connect(w.chat_view(), &ui::ChatView::reply_finished, this, [this] {
    const ui::Conversation& c = bench_.window().chat_view()->conversation();
    if (c.messages.empty() || c.messages.back().role != "assistant") return on_finished(0, 0.0, true);
    const ui::MessageStats& s = c.stats_at(c.messages.size() - 1);
    on_finished(s.output_tokens, s.total_s, false);
  });
  using View = ui::MainWindow::View;
  const std::map<QString, View> docks = {{"throughput", View::Throughput},
                                         {"kv", View::KvCache},
                                         {"timeline", View::Timeline},
                                         {"attention", View::Attention}};
  if (options_.view == "none") {
    for (const auto& [name, view] : docks) w.view_widget(view)->parentWidget()->hide();
  } else if (docks.count(options_.view)) {
    w.show_view(docks.at(options_.view));
    raised_ = qobject_cast<const ui::LiveView*>(w.view_widget(docks.at(options_.view)));
  } else {
    return fail("--bench-view: '" + options_.view + "' is not throughput, kv, timeline, attention or none");
  }
  if (!options_.screenshot.isEmpty()) {
    // Found out before the benchmark runs, not after minutes of it.
    const QFileInfo dir(QFileInfo(options_.screenshot).absolutePath());
    if (!dir.isDir()) return fail("--bench-screenshot: the folder " + dir.filePath() + " does not exist");
    if (!dir.isWritable()) return fail("--bench-screenshot: the folder " + dir.filePath() + " is not writable");
  }
  connect(&w, &ui::MainWindow::model_ready, this, &BenchMode::on_model_ready, Qt::SingleShotConnection);
  connect(&bench_.worker(), &EngineWorker::load_failed, this,
          [this](quint64, const QString& error, bool) { fail("cannot open the model: " + error); });
  connect(w.completion_view(), &ui::CompletionView::generation_finished, this, [this](const ui::TokenDelta& d) {
    on_finished(d.num_output_tokens, d.total_time, d.finish_reason == FinishReason::Error);
  });
  if (!w.open_model(options_.model, options_.tokenizer)) fail(options_.model + ": cannot open");
}

void BenchMode::on_model_ready() {
  ui::CompletionView* c = bench_.window().completion_view();
  c->prompt_editor()->setPlainText({});
  c->sampling()->set_params(bench_params(options_));
  SamplingParams chat = bench_params(options_);
  // A chat turn's prompt and reply share the context; the meter would refuse more.
  chat.max_tokens = std::min(chat.max_tokens, std::max(1, bench_.window().model_info().context_length - 32));
  bench_.window().chat_view()->sampling()->set_params(chat);
  next_generation();
}

void BenchMode::next_generation() {
  if (done_ == 0 && !measuring_) {
    // The warm-up is over: measure from here.
    measuring_ = true;
    gui_cpu_start_ = this_thread_cpu_seconds();
    wall_start_ = StepLog::now();
    const ui::ThroughputChart* chart = bench_.window().throughput_chart();
    draws_start_ = chart->draw_count();
    full_replots_start_ = chart->full_replots();
    draw_ms_start_ = chart->pacer().total_cost_ms();
    if (raised_) {
      raised_draws_start_ = raised_->draw_count();
      raised_draw_ms_start_ = raised_->pacer().total_cost_ms();
    }
    deliveries_start_ = bench_.mailbox().deliveries();
    wakeups_start_ = bench_.mailbox().wakeups();
    threads_start_ = thread_cpu_by_name();
    if (options_.count_paints) qApp->installEventFilter(this);
    if (options_.ab_phase_ms > 0) start_ab();
  }
  generation_started_ = StepLog::now();
  if (options_.chat.isEmpty()) {
    bench_.window().completion_view()->generate();
  } else {
    ui::ChatView* chat = bench_.window().chat_view();
    chat->new_chat();
    chat->input()->setPlainText("Once upon a time");
    markdown_sent_.clear();
    chat->send();
    if (!chat->is_generating()) return fail("the chat did not send: " + chat->last_error());
  }
  if (quiet_at_next_start_) {
    quiet_at_next_start_ = false;
    switch_phase();
  }
  if (!options_.screenshot.isEmpty() && done_ == options_.generations / 2) {
    // 40 % into the generation at the measured speed (the warm-up's when none was measured
    // yet): the charts and text mid-stream.
    const double per_generation = done_ > 0 ? engine_seconds_ / done_ : warmup_seconds_;
    const int after_ms = std::max(1, int(400.0 * per_generation));
    QTimer::singleShot(after_ms, this, [this] { take_screenshot(); });
  }
}

bool BenchMode::take_screenshot() {
  if (shot_taken_) return true;
  shot_taken_ = true;
  ui::MainWindow& w = bench_.window();
  // PNG whatever the name ends with (the help says PNG; save() would guess from the suffix).
  if (!w.grab().save(options_.screenshot, "PNG")) {
    fail("--bench-screenshot: cannot write " + options_.screenshot);
    return false;
  }
  if (!w.completion_view()->is_generating() && !w.chat_view()->is_generating())
    QTextStream(stderr) << "llmwb --bench-gui: the generation ended before the screenshot\n";
  return true;
}

void BenchMode::deliver_tokens(ui::TokenDelta d) {
  // The answer goes on where the last reply stopped, so replies differ from one another.
  QString shown;
  for (qsizetype n = QString::fromStdString(d.text).size(); n > 0; --n) {
    shown += markdown_[markdown_at_];
    markdown_at_ = (markdown_at_ + 1) % markdown_.size();
  }
  markdown_sent_ += shown;
  d.text = shown.toStdString();
  if (d.finished) d.final_text = markdown_sent_.toStdString();
  bench_.window().on_tokens(d);
}

void BenchMode::on_finished(int tokens, double total_time, bool error) {
  if (error) return fail("a generation failed");
  if (done_ >= 0) {
    tokens_ += tokens;
    engine_seconds_ += total_time;
  } else {
    warmup_seconds_ = total_time;
  }
  ++done_;
  if (done_ >= options_.generations) return report();
  // Queued: the Completion view finishes its own handling of the delta first.
  QTimer::singleShot(0, this, &BenchMode::next_generation);
}

void BenchMode::report() {
  // A generation faster than the one that timed the screenshot ends before its timer fires:
  // the window as it is then, rather than no file (the timer dies with the application).
  if (!options_.screenshot.isEmpty() && !take_screenshot()) return;
  const double gui_cpu = this_thread_cpu_seconds() - gui_cpu_start_;
  ui::MainWindow& w = bench_.window();
  QJsonObject j = result_json("gui", options_, w.settings().engine_config(options_.model, {}).threads, tokens_,
                              engine_seconds_, gui_cpu, StepLog::now() - wall_start_,
                              cpu_difference(threads_start_, thread_cpu_by_name()));
  j["view"] = options_.view;
  if (!options_.chat.isEmpty()) {
    // The chat's rewrites of the streaming reply (Markdown parsed and laid out, then painted).
    const ui::ChatView* chat = w.chat_view();
    j["chat"] = options_.chat;
    j["chat_rewrites"] = double(chat->stream_rewrites());
    j["chat_rewrite_ms_total"] = chat->stream_rewrite_ms();
    j["chat_rewrite_ms_per"] = chat->stream_rewrites() > 0 ? chat->stream_rewrite_ms() / chat->stream_rewrites() : 0.0;
  }
  // CLOCK_MONOTONIC at the start of the measured phase (to cut a `perf record -k mono` trace).
  j["measure_start_monotonic_s"] = wall_start_;
  j["platform"] = QApplication::platformName();
  j["screen_refresh_hz"] = w.screen() ? w.screen()->refreshRate() : 0.0;
  j["mailbox_interval_ms"] = bench_.mailbox().frame_interval_ms();
  const double wall = j["wall_seconds"].toDouble();
  const long draws = w.throughput_chart()->draw_count() - draws_start_;
  j["throughput_chart_draws"] = double(draws);
  j["throughput_chart_draws_per_s"] = wall > 0 ? double(draws) / wall : 0.0;
  j["throughput_chart_last_draw_ms"] = w.throughput_chart()->pacer().last_cost_ms();
  // GUI thread CPU per draw, and the draws that replotted every layer (the others, the live
  // layer only).
  j["throughput_chart_mean_draw_ms"] =
      draws > 0 ? (w.throughput_chart()->pacer().total_cost_ms() - draw_ms_start_) / double(draws) : 0.0;
  j["throughput_chart_full_replots"] = double(w.throughput_chart()->full_replots() - full_replots_start_);
  if (raised_) {  // the same for the view of the dock raised (the throughput chart by default)
    const long n = raised_->draw_count() - raised_draws_start_;
    j["view_draws_per_s"] = wall > 0 ? double(n) / wall : 0.0;
    j["view_mean_draw_ms"] = n > 0 ? (raised_->pacer().total_cost_ms() - raised_draw_ms_start_) / double(n) : 0.0;
  }
  // Engine -> GUI deliveries (and the wake-ups behind them): near the frame rate at any speed.
  const long deliveries = bench_.mailbox().deliveries() - deliveries_start_;
  const long wakeups = bench_.mailbox().wakeups() - wakeups_start_;
  j["mailbox_deliveries_per_s"] = wall > 0 ? double(deliveries) / wall : 0.0;
  j["mailbox_wakeups_per_s"] = wall > 0 ? double(wakeups) / wall : 0.0;
  if (options_.ab_phase_ms > 0) j["ab"] = ab_report();
  if (options_.count_paints) {
    qApp->removeEventFilter(this);
    QJsonObject paints;
    for (const auto& [name, c] : paints_)
      paints[name] = QJsonObject{{"events", double(c.events)}, {"megapixels", c.pixels / 1e6}};
    j["paints"] = paints;
  }
  emit finished(j);
}

bool BenchMode::eventFilter(QObject* watched, QEvent* event) {
  if (event->type() == QEvent::Paint && watched->isWidgetType()) {
    PaintCount& c = paints_[QString::fromLatin1(watched->metaObject()->className())];
    ++c.events;
    for (const QRect& r : static_cast<QPaintEvent*>(event)->region()) c.pixels += double(r.width()) * r.height();
  }
  return false;
}

void BenchMode::fail(const QString& why) {
  phase_timer_.stop();
  bench_.mailbox().hold(false);
  emit failed(why);
}

const ui::LiveView& BenchMode::counted_view() const {
  return raised_ ? *raised_ : *bench_.window().throughput_chart();
}

void BenchMode::start_ab() {
  // One sample per step: a generation takes at most its token limit (or the context) in steps.
  const long context = std::max(1, bench_.window().model_info().context_length);
  const long per_generation = std::min<long>(options_.max_tokens, context) + 2;
  step_log_.enable(size_t(std::min<long>(per_generation * options_.generations, 1L << 24)));
  bench_.worker().set_step_observer(&step_log_);
  phases_.clear();
  begin_phase(true);
}

void BenchMode::begin_phase(bool live) {
  AbPhase p;
  p.live = live;
  p.start = StepLog::now();
  // A live phase settles after the settle time (longer than a mailbox interval, so that
  // deliveries run at their pace again after the backlog); a quiet one as soon as the GUI
  // thread has finished what the live phase left it (a quarter of it, and the pending draw,
  // see settle()): with short generations a quiet phase holds only one generation's tail.
  const int settle_ms = live ? options_.ab_settle_ms : options_.ab_settle_ms / 4;
  p.settled = p.start + 1e-3 * settle_ms;
  phases_.push_back(p);
  settled_ = false;
  // Lengths drawn from 0.5-1.5 x the phase length: phases of a fixed length lock onto
  // generations of a similar one (stories260K: 0.1 s), each phase then seeing the same
  // positions of every generation.
  phase_timer_.start(int(std::lround(options_.ab_phase_ms * (0.5 + phase_jitter_(phase_rng_)))));
  phase_draws_start_ = counted_view().draw_count();
  const int k = int(phases_.size()) - 1;
  // Tagged before holding and after releasing: the steps of either switch's first moments
  // count as the live phase's (and fall into its settle time anyway).
  if (live) {
    step_log_.set_phase(k);
    bench_.mailbox().hold(false);
  } else {
    bench_.mailbox().hold(true);
    step_log_.set_phase(k);
  }
  QTimer::singleShot(settle_ms, Qt::PreciseTimer, this, [this, k] { settle(k); });
}

void BenchMode::on_phase_timer() {
  // A quiet phase ends when a generation finishes in it (the finish waits in the held
  // mailbox). Begun late in a generation it would hold only the last steps, within its settle
  // time: nothing to measure (generations shorter than a phase, as stories260K's 30 ms ones,
  // would leave every quiet phase empty). So when the generation in flight is expected to
  // finish (at the warm-up's engine time) within a mean phase length, the live phase goes on
  // to the next generation's start, and the quiet phase begins there.
  if (phases_.empty()) return;
  if (phases_.back().live) {
    const double remaining = warmup_seconds_ - (StepLog::now() - generation_started_);
    if (remaining < 1e-3 * options_.ab_phase_ms) {
      quiet_at_next_start_ = true;
      return;
    }
  }
  switch_phase();
}

void BenchMode::settle(int k) {
  if (k != int(phases_.size()) - 1 || settled_) return;  // the phase is over
  // A quiet phase settles once the draw the pacer scheduled in the live phase has been made
  // (up to the pacer's interval, which a costly draw stretches past the settle time): it
  // belongs to the live phase's work.
  if (!phases_.back().live && counted_view().pacer().pending()) {
    QTimer::singleShot(2, Qt::PreciseTimer, this, [this, k] { settle(k); });
    return;
  }
  mark_settled();
}

void BenchMode::mark_settled() {
  settled_ = true;
  AbPhase& p = phases_.back();
  // A settle timer that fired late (the GUI thread was busy) moves the start of the counted
  // part of the phase for the steps too.
  p.settled = std::max(p.settled, StepLog::now());
  const ui::LiveView& v = counted_view();
  phase_draws_settled_ = v.draw_count();
  p.settle_draws = phase_draws_settled_ - phase_draws_start_;
  phase_draw_ms_settled_ = v.pacer().total_cost_ms();
  phase_cpu_settled_ = this_thread_cpu_seconds();
}

void BenchMode::end_phase() {
  if (!settled_) mark_settled();
  AbPhase& p = phases_.back();
  p.end = StepLog::now();
  const ui::LiveView& v = counted_view();
  p.draws = v.draw_count() - phase_draws_settled_;
  p.draw_ms = v.pacer().total_cost_ms() - phase_draw_ms_settled_;
  p.gui_cpu_s = this_thread_cpu_seconds() - phase_cpu_settled_;
}

QJsonObject BenchMode::ab_report() {
  phase_timer_.stop();
  end_phase();
  StepLog& log = step_log_;
  log.set_phase(-1);
  bench_.worker().set_step_observer(nullptr);
  bench_.mailbox().hold(false);
  const AbResult r = analyse_ab(log.samples(), phases_);
  auto side = [](const AbSide& s) {
    QJsonObject o;
    o["phases"] = s.phases;
    o["steps"] = double(s.steps);
    o["tokens"] = double(s.tokens);
    o["step_seconds"] = s.step_seconds;
    o["tok_s"] = s.tok_s();
    o["wall_seconds"] = s.wall_seconds;
    o["draws"] = double(s.draws);
    o["draws_per_s"] = s.wall_seconds > 0 ? double(s.draws) / s.wall_seconds : 0.0;
    o["ms_per_draw"] = s.draws > 0 ? s.draw_ms / double(s.draws) : 0.0;
    o["settle_draws"] = double(s.settle_draws);
    o["gui_thread_cpu_share"] = s.wall_seconds > 0 ? s.gui_cpu_s / s.wall_seconds : 0.0;
    return o;
  };
  QJsonObject j;
  j["phase_ms"] = options_.ab_phase_ms;  // the mean; each is 0.5-1.5 times it
  j["settle_ms"] = options_.ab_settle_ms;
  j["context_bucket"] = AbResult::kContextBucket;
  j["pairs"] = r.pairs;
  j["settle_steps"] = double(r.settle_steps);
  j["unlogged_steps"] = double(log.overflow());
  j["live"] = side(r.live);
  j["quiet"] = side(r.quiet);
  j["overhead_pct_median"] = 100.0 * r.overhead_median;
  j["overhead_pct_pooled"] = 100.0 * r.overhead_pooled;
  j["overhead_raw_pct_median"] = 100.0 * r.overhead_raw_median;
  j["overhead_raw_pct_pooled"] = 100.0 * r.overhead_raw_pooled;
  QJsonArray pairs;
  for (double o : r.pair_overhead) pairs.append(100.0 * o);
  j["overhead_pct_per_pair"] = pairs;
  log.enable(0);
  return j;
}

}  // namespace llmwb::gui
