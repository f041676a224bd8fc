// throughput_chart.h — tokens per second over time, prefill and decode apart, with the
// latest request's time to first token and time per output token.
#pragma once

#include <QWidget>

#include <deque>

#include "frame_pacer.h"
#include "telemetry_frame.h"

class QCustomPlot;
class QCPTextElement;

namespace llmwb::ui {

class ThroughputChart : public QWidget {
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
  static constexpr double kSmoothingSeconds = 0.5;
  void clear();

  int decode_points() const;
  double last_decode_rate() const { return last_decode_rate_; }

 protected:
  void showEvent(QShowEvent* event) override;
  void changeEvent(QEvent* event) override;

 private:
  void restyle();

 private:
  void update_title();

  QCustomPlot* plot_;
  QCPTextElement* title_;
  FramePacer pacer_;
  double window_seconds_ = 30.0;
  double first_time_ = -1.0;
  std::deque<StepRecord> recent_;  // the steps of the last kSmoothingSeconds
  double last_time_ = 0.0;
  double last_decode_rate_ = 0.0, last_prefill_rate_ = 0.0;
  double ttft_ = -1.0, tpot_ = -1.0;
};

}  // namespace llmwb::ui
