// bench_mode.h — `llmwb --bench-gui N`: the GUI's cost to generation throughput, measured.
//
// The design allows the GUI at most 5% of headless throughput with the live charts on screen.
// This mode makes that repeatable: it opens the model in the real window (Completion tab, the
// chosen dock raised), runs N greedy generations back to back through the Completion view
// exactly as a user's clicks would, and prints one JSON line: tokens per second of engine time
// (the sum of the requests' own total_time, so GUI round trips between generations do not
// count), the GUI thread's CPU seconds and per 1000 tokens, every thread's CPU time by name,
// and how often the throughput chart drew and what a draw cost on average. With --bench-headless the same generations run on
// an Engine driven directly from the main thread, as llmwb-cli does, with no window at all:
// the baseline. tools/bench_gui_overhead.sh interleaves both under Xvfb and reports medians.
//
// With --bench-ab [--bench-phase-ms MS] the comparison happens inside one process instead
// (ab_phases.h): while the generations run, the window alternates every ~MS (250 by default;
// each phase 0.5-1.5 times it) between "live" (as a user sees it) and "quiet" (the
// FrameMailbox held: no results delivered, nothing drawn, the GUI thread idle as in a headless
// run; a finish held there ends the phase, and a switch due late in a short generation waits
// for the next one's start), the engine thread logs every step with the phase
// it started in (StepLog), and the JSON line gains an "ab" object: per phase tokens, step
// seconds, tok/s, the raised view's draws per second and cost, and the overhead as the median
// over adjacent live/quiet pairs. Drift between separate runs cannot fool it. The line's
// other figures then cover both phases together.
#pragma once

#include <QJsonObject>
#include <QObject>
#include <QString>
#include <QTimer>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "ab_phases.h"
#include "live_view.h"
#include "workbench.h"

namespace llmwb::gui {

struct BenchOptions {
  QString model, tokenizer;
  int generations = 20;      // measured generations (one more runs first as a warm-up)
  int max_tokens = 1 << 20;  // greedy from BOS runs to the context length
  int threads = 0;           // engine threads; 0 = the application's automatic choice
  QString view = "throughput";  // dock raised: throughput, kv, timeline, attention, or none
  bool count_paints = false;     // report paint events by widget class (an event filter)
  QString screenshot;            // PNG of the window while the middle generation streams ("": none)
  int ab_phase_ms = 0;           // A/B mode: live and quiet phases of this length (0: off)
  // Steps this soon after a switch to live are left out (> a mailbox interval); after a switch
  // to quiet, a quarter of it and until the raised view's pending draw is made.
  int ab_settle_ms = 40;
  // Which view generates: "" the Completion view; "text" the Chat view, a new chat per
  // generation, its reply as the model wrote it; "markdown" the Chat view showing a long
  // Markdown answer (headings, lists, tables, code) in place of the model's text, character
  // for character, so that the engine runs as before and the GUI renders Markdown live.
  QString chat;
};

// The long Markdown answer of --bench-chat markdown (about 12 000 characters).
QString bench_markdown_answer();

// The headless baseline: prints the JSON line and returns the process exit code.
int run_headless_bench(const BenchOptions& options);
// The window (on fresh, isolated settings) and a BenchMode driving it; runs the event loop.
int run_gui_bench(const BenchOptions& options);

class BenchMode : public QObject {
  Q_OBJECT

 public:
  BenchMode(Workbench& bench, BenchOptions options);
  // Starts the sequence; `finished` or `failed` follows.
  void start();

 signals:
  // The JSON line's object (run_gui_bench prints it and quits with 0).
  void finished(const QJsonObject& result);
  // Why the benchmark could not run (run_gui_bench prints it and quits with 1).
  void failed(const QString& why);

 private:
  void on_model_ready();
  void next_generation();
  void on_finished(int tokens, double total_time, bool error);
  // --bench-chat markdown: the chat's deltas carry the Markdown answer instead of the model's text.
  void deliver_tokens(ui::TokenDelta delta);
  bool take_screenshot();   // once; false (after fail()) when the file cannot be written
  void report();
  void fail(const QString& why);
  bool eventFilter(QObject* watched, QEvent* event) override;
  // A/B mode: the view whose draws are counted (the raised one, else the throughput chart).
  const ui::LiveView& counted_view() const;
  void start_ab();
  void begin_phase(bool live);
  void settle(int k);
  void mark_settled();
  void end_phase();
  void switch_phase() {
    end_phase();
    begin_phase(!phases_.back().live);
  }
  // The phase timer: a live phase's switch to quiet waits for the next generation's start
  // when the one in flight is expected to finish within a phase (see the definition).
  void on_phase_timer();
  QJsonObject ab_report();

  Workbench& bench_;
  BenchOptions options_;
  int done_ = -1;  // generations finished; -1 while the warm-up runs
  bool measuring_ = false;
  bool shot_taken_ = false;
  long tokens_ = 0;
  QString markdown_;        // --bench-chat markdown: the answer shown
  qsizetype markdown_at_ = 0;
  QString markdown_sent_;   // what the current reply has shown so far
  double engine_seconds_ = 0.0;
  double warmup_seconds_ = 0.0;  // the warm-up generation's engine time (times a 1-generation screenshot)
  double gui_cpu_start_ = 0.0;
  double wall_start_ = 0.0;
  long draws_start_ = 0;
  long full_replots_start_ = 0;
  double draw_ms_start_ = 0.0;
  const ui::LiveView* raised_ = nullptr;  // the live view of the dock raised, if any
  long raised_draws_start_ = 0;
  double raised_draw_ms_start_ = 0.0;
  long deliveries_start_ = 0, wakeups_start_ = 0;
  std::map<std::string, double> threads_start_;
  struct PaintCount {
    long events = 0;
    double pixels = 0.0;
  };
  std::map<QString, PaintCount> paints_;  // by class name, while measuring
  // A/B mode.
  QTimer phase_timer_;
  std::mt19937 phase_rng_{20261130};  // fixed seed: the same sequence of phase lengths each run
  std::uniform_real_distribution<double> phase_jitter_{0.0, 1.0};
  std::vector<AbPhase> phases_;
  StepLog step_log_;   // the worker's StepObserver while the A/B mode runs
  bool settled_ = false;  // the current phase's settle time is over
  bool quiet_at_next_start_ = false;  // the due switch to quiet waits for the next generation
  double generation_started_ = 0.0;   // StepLog::now() when the generation in flight was started
  long phase_draws_start_ = 0, phase_draws_settled_ = 0;
  double phase_draw_ms_settled_ = 0.0, phase_cpu_settled_ = 0.0;
};

}  // namespace llmwb::gui
