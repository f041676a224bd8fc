// timeline_view.h — the engine's last steps as a Gantt strip (schedule, prefill, decode,
// sample) and the batch composition of each step (prefill and decode tokens, stacked).
#pragma once

#include <deque>
#include <vector>

#include "live_view.h"
#include "telemetry_frame.h"

class QCustomPlot;
class QCPBars;
class QCPItemRect;

namespace llmwb::ui {

class TimelineView : public LiveView {
  Q_OBJECT

 public:
  explicit TimelineView(QWidget* parent = nullptr);

  void add_frame(const TelemetryFrame& frame);
  void clear();
  int steps_shown() const { return int(steps_.size()); }

  static constexpr int kSteps = 48;

 protected:
  void draw() override;
  void restyle() override;

 private:
  QCustomPlot* gantt_;
  QCustomPlot* batch_;
  QCPBars* prefill_bars_;
  QCPBars* decode_bars_;
  std::deque<StepRecord> steps_;
  std::vector<QCPItemRect*> bars_;  // reused frame to frame: creating items is costly
};

}  // namespace llmwb::ui
