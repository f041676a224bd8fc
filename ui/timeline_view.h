// timeline_view.h — the engine's last steps as a Gantt strip (schedule, draft, prefill, decode
// or verify, sample) and the batch composition of each step (prefill and decode tokens,
// stacked); with speculative decoding, a third chart: the acceptance rate at each draft
// position and each step's mean acceptance length (tokens per verification, bonus included).
// Both time axes count back from the newest step, in steps (1-2-5 milliseconds, a fixed number
// of steps), so that the bars redraw alone on their live layer while axes and labels stay
// cached (see LivePlot). In a low dock the speculation chart keeps its labels apart: fewer
// ticks, the vertical axis titles only where they fit, and at the smallest no legend.
#pragma once

#include <deque>
#include <vector>

#include <QString>

#include "live_view.h"
#include "telemetry_frame.h"

class QCPBars;
class QCPGraph;
class QCPItemRect;
class QCPLayout;

namespace llmwb::ui {

class LivePlot;

class TimelineView : public LiveView {
  Q_OBJECT

 public:
  explicit TimelineView(QWidget* parent = nullptr);
  ~TimelineView() override;

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
  // Below these heights (pixels) the speculation chart thins its ticks and drops the axis
  // titles that do not fit; below the second, its legend and the top axis' numbers too.
  static constexpr int kCompactHeight = 220;
  static constexpr int kTinyHeight = 150;

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;
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
  QCPBars* paused_bars_;
  // Fits the speculation chart's ticks, titles and legend to `height`; true if that changed them.
  bool fit_speculation_chart(int height);
  int spec_density_ = -1;  // 0 full, 1 compact, 2 tiny (-1: not fitted yet)
  QCPLayout* spec_legend_row_ = nullptr;  // the legend's row, out of the layout while tiny   // sequences held by the token inspector's Pause
  std::deque<StepRecord> steps_;
  std::vector<QCPItemRect*> bars_;  // reused frame to frame: creating items is costly
};

}  // namespace llmwb::ui
