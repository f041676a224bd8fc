// timeline_view.h — the engine's last steps as a Gantt strip (schedule, draft, prefill, decode
// or verify, sample) and the batch composition of each step (prefill and decode tokens,
// stacked); with speculative decoding, a third chart: the acceptance rate at each draft
// position and each step's mean acceptance length (tokens per verification, bonus included).
// Both time axes count back from the newest step, in steps (1-2-5 milliseconds, a fixed number
// of steps), so that the bars redraw alone on their live layer while axes and labels stay
// cached (see LivePlot).
#pragma once

#include <deque>
#include <vector>

#include <QString>

#include "live_view.h"
#include "telemetry_frame.h"

class QCPBars;
class QCPGraph;
class QCPItemRect;

namespace llmwb::ui {

class LivePlot;

class TimelineView : public LiveView {
  Q_OBJECT

 public:
  explicit TimelineView(QWidget* parent = nullptr);

  void add_frame(const TelemetryFrame& frame);
  void clear();
  int steps_shown() const { return int(steps_.size()); }
  LivePlot* gantt() const { return gantt_; }
  LivePlot* batch() const { return batch_; }
  LivePlot* speculation() const { return spec_; }
  // What the speculation chart shows now: acceptance per draft position, and its caption.
  const std::vector<double>& acceptance_per_position() const { return acceptance_at_; }
  QString speculation_caption() const { return spec_caption_; }

  static constexpr int kSteps = 48;

 protected:
  void draw() override;
  void restyle() override;

 private:
  LivePlot* gantt_;
  LivePlot* batch_;
  bool replot_all_ = true;  // the next draw replots every layer of both plots
  QCPBars* prefill_bars_;
  QCPBars* decode_bars_;
  LivePlot* spec_;
  QCPBars* acceptance_bars_;   // per draft position (all steps so far)
  QCPGraph* mean_length_;      // per step, on the right axis
  std::vector<double> acceptance_at_;
  QString spec_caption_;
  QCPBars* paused_bars_;   // sequences held by the token inspector's Pause
  std::deque<StepRecord> steps_;
  std::vector<QCPItemRect*> bars_;  // reused frame to frame: creating items is costly
};

}  // namespace llmwb::ui
