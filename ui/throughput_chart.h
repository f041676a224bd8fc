// throughput_chart.h — tokens per second over time, prefill and decode apart, with the
// latest request's time to first token and time per output token.
//
// Drawn at screen rate while tokens stream, so a draw must be cheap even in software rendering
// (Xvfb). What changes from frame to frame (the two graphs and the title's figures) lives on
// its own buffered QCustomPlot layer on top; background, grid, axes, tick labels and legend
// stay in a cached buffer. The axis ranges move in steps (the time axis in chunks, the rate
// axes in 1-2-5 steps), so most draws only redraw the live layer and composite the two
// buffers: no layout, no tick labels, no axes. A full replot happens when a range steps.
#pragma once

#include <QElapsedTimer>

#include <deque>

#include "live_view.h"
#include "telemetry_frame.h"

class QCustomPlot;
class QCPLayer;
class QCPTextElement;

namespace llmwb::ui {

class LivePlot;

class ThroughputChart : public LiveView {
  Q_OBJECT

 public:
  explicit ThroughputChart(QWidget* parent = nullptr);

  // One point per frame: decode tokens over the compute time of the steps in the last
  // kSmoothingSeconds (a mixed step's time is split between prefill and decode by token
  // share), so that one slow step does not make the line jump; prefill as one point per frame
  // that computed prompt tokens.
  void add_frame(const TelemetryFrame& frame);
  // Shown in the title: the latest request's latency figures (a negative value keeps the
  // figure shown).
  void set_request_latency(double time_to_first_token, double time_per_output_token);
  void clear();

  static constexpr double kSmoothingSeconds = 0.5;
  // The engine was idle (between generations, before an experiment) when no step ran for this
  // long, and for far longer than between the steps before (slow motion spaces steps evenly):
  // the line breaks there instead of joining the two sides.
  static constexpr double kIdleSeconds = 0.25;

  // Decode points drawn (line breaks not counted).
  int decode_points() const;
  // Breaks in the decode line, one per idle period in the window.
  int decode_gaps() const;
  double last_decode_rate() const { return last_decode_rate_; }
  // The title as shown: rates, TTFT, TPOT.
  QString title_text() const;
  QCustomPlot* plot() const;
  LivePlot* live_plot() const { return plot_; }
  // Replots of every layer (a range stepped, the data were replaced, a resize); the other
  // draws replotted the live layer only.
  long full_replots() const;

 protected:
  void draw() override;
  void restyle() override;

 private:
  void update_title();
  // Sets the axis ranges for the data now held; true if any of them changed.
  bool update_ranges();

  LivePlot* plot_;
  QCPTextElement* title_;
  bool replot_all_ = true;  // the next draw replots every layer
  QElapsedTimer title_since_;  // since the title's figures last changed
  // The next draw lays the title out again: its figures are at least 250 ms old, or a latency
  // figure changed. Set, not laid out at once, so that a delivery's frame that follows its
  // latency update (a first token, a finish) is in the title the draw shows.
  bool title_dirty_ = true;
  double window_seconds_ = 30.0;
  double first_time_ = -1.0;
  std::deque<StepRecord> recent_;  // the steps of the last kSmoothingSeconds
  double last_time_ = -1.0;        // end of the newest step seen
  double last_gap_ = 0.0;          // idle time between the two newest steps
  double last_decode_rate_ = 0.0, last_prefill_rate_ = 0.0;
  double ttft_ = -1.0, tpot_ = -1.0;
};

}  // namespace llmwb::ui
