// frame_pacer.h — keeps a live view's drawing within a share of wall time.
//
// Telemetry arrives at screen rate, but on a machine whose cores all run the engine every
// millisecond the GUI thread paints is a millisecond a thread-pool worker waits. A pacer
// redraws at most every `min_interval_ms` (the screen's frame interval, see LiveView), and
// stretches the interval so that drawing takes at most `budget` of the time (interval = last
// draw's cost / budget, the cost in the GUI thread's CPU time): with the 15% budget a view
// that takes up to 2.5 ms to draw keeps the 60 Hz screen rate, one that takes 5 ms redraws
// every 33 ms. Requests in between coalesce into one draw.
// `draw` must paint synchronously (QWidget::repaint, QCustomPlot::rpImmediateRefresh) for
// its cost to be measured.
#pragma once

#include <QElapsedTimer>
#include <QObject>

#include <functional>

class QScreen;

namespace llmwb::ui {

class FramePacer {
 public:
  // One frame of `screen` in whole ms (its refresh rate, 60 Hz when unknown or absent), at
  // least 4 ms: the shortest useful interval between two draws of a view on it.
  static int frame_interval_ms(const QScreen* screen);

  // The budget is per view. 15%: the throughput chart's draw (the live layer only) costs 1-2 ms
  // of GUI-thread CPU under Xvfb, so it draws at the screen's rate (~57 draws/s on stories260K,
  // every token on llama-110m); the old 5% held it to ~25 draws/s. The in-process A/B
  // measurement (llmwb --bench-gui N --bench-ab, BENCHMARKS.md) found no difference between
  // the two on llama-110m. On a machine where a draw costs more, the budget still bounds what
  // drawing can take.
  static constexpr double kDefaultBudget = 0.15;
  FramePacer(QObject* owner, std::function<void()> draw, double budget = kDefaultBudget, int min_interval_ms = 33);

  // Draws now when the budget allows, otherwise once at the earliest allowed time.
  void request();
  // Draws now (the view was just shown, or its data were replaced).
  void draw_now();
  double last_cost_ms() const { return last_cost_ms_; }
  // The summed cost of the draws so far (the GUI benchmark reports the mean per draw, with
  // LiveView::draw_count).
  double total_cost_ms() const { return total_cost_ms_; }
  int min_interval_ms() const { return min_interval_ms_; }
  // A draw is scheduled (requested within the interval, not yet made).
  bool pending() const { return pending_; }
  void set_min_interval_ms(int ms) { min_interval_ms_ = ms; }

 private:
  QObject* owner_;
  std::function<void()> draw_;
  double budget_;
  int min_interval_ms_;
  QElapsedTimer since_draw_;
  double last_cost_ms_ = 0.0;
  double total_cost_ms_ = 0.0;
  bool pending_ = false;
};

}  // namespace llmwb::ui
