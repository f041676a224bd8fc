// timeline_view.h — the engine's last steps as a Gantt strip (schedule, prefill, decode,
// sample) and the batch composition of each step (prefill and decode tokens, stacked).
#pragma once

#include <QWidget>

#include <deque>
#include <vector>

#include "frame_pacer.h"
#include "telemetry_frame.h"

class QCustomPlot;
class QCPBars;
class QCPItemRect;

namespace llmwb::ui {

class TimelineView : public QWidget {
  Q_OBJECT

 public:
  explicit TimelineView(QWidget* parent = nullptr);

  void add_frame(const TelemetryFrame& frame);
  void clear();
  int steps_shown() const { return int(steps_.size()); }

  static constexpr int kSteps = 48;

 protected:
  void showEvent(QShowEvent* event) override;
  void changeEvent(QEvent* event) override;

 private:
  void restyle();

 private:
  void redraw();

  QCustomPlot* gantt_;
  QCustomPlot* batch_;
  QCPBars* prefill_bars_;
  QCPBars* decode_bars_;
  std::deque<StepRecord> steps_;
  std::vector<QCPItemRect*> bars_;  // reused frame to frame: creating items is costly
  FramePacer pacer_;
};

}  // namespace llmwb::ui
