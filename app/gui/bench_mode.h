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
#pragma once

#include <QObject>
#include <QString>

#include <map>
#include <string>

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
};

// The headless baseline: prints the JSON line and returns the process exit code.
int run_headless_bench(const BenchOptions& options);
// The window (on fresh, isolated settings) and a BenchMode driving it; runs the event loop.
int run_gui_bench(const BenchOptions& options);

class BenchMode : public QObject {
  Q_OBJECT

 public:
  BenchMode(Workbench& bench, BenchOptions options);
  // Starts the sequence; the application quits with 0 after printing the JSON line, 1 on any
  // failure (reported on stderr).
  void start();

 private:
  void on_model_ready();
  void next_generation();
  void on_finished(int tokens, double total_time, bool error);
  void report();
  void fail(const QString& why);
  bool eventFilter(QObject* watched, QEvent* event) override;

  Workbench& bench_;
  BenchOptions options_;
  int done_ = -1;  // generations finished; -1 while the warm-up runs
  bool measuring_ = false;
  long tokens_ = 0;
  double engine_seconds_ = 0.0;
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
};

}  // namespace llmwb::gui
