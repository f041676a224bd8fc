// parallelism_view.h — what tensor and pipeline parallelism cost (docs/PARALLEL.md), live.
//
// Three parts, from the per-rank telemetry of each step (StepTelemetry::ranks):
// - lanes: one per rank ("stage p · tp t"), the newest steps' forward passes back to back on
//   one clock (the time between two steps, when no rank works, is cut at a dashed line: with
//   slow motion it would leave each step a sliver), each interval coloured by what the rank did:
//   compute, all-reduce (the tensor-parallel group's collective, waiting for the slower rank
//   included), send and receive (waiting for the previous stage: a pipeline bubble). Gaps are
//   idle. The micro-batch of an interval shows as its shade and, where it is wide enough, a
//   label "m1". A runner that records no intervals (RankTelemetry::spans empty) still reports
//   its totals: those are drawn as consecutive receive, compute and all-reduce segments from
//   the start of the forward pass (the amounts, not the order);
// - shares: per rank, the part of the forward passes spent computing, communicating and in the
//   bubble (everything else: waiting for a stage, idle), over every step since the model opened;
// - volume: bytes per token each tensor-parallel rank all-reduces and each rank chain hands
//   between stages, measured against the analytic 2 x layers x dim x 4 bytes (two all-reduces
//   of one f32 activation row per layer) and (stages - 1) x dim x 4 bytes.
// With one rank the view says how to run with more (Settings ▸ Parallelism).
#pragma once

#include <deque>
#include <thread>
#include <vector>

#include "live_view.h"
#include "llmwb/model_info.h"
#include "llmwb/telemetry.h"
#include "telemetry_frame.h"

class QCPBars;
class QCPItemRect;
class QCPItemStraightLine;
class QCPItemText;
class QLabel;
class QPushButton;
class QSpinBox;
class QStackedWidget;
class QTableWidget;

namespace llmwb::ui {

class LivePlot;
class LiveText;

class ParallelismView : public LiveView {
  Q_OBJECT

 public:
  explicit ParallelismView(QWidget* parent = nullptr);

  // The loaded engine's layout and its model's shape (for the analytic volume); clears the
  // data. tp = pp = 1 (or no model) shows the empty state.
  void set_layout(int tensor_parallel_size, int pipeline_parallel_size, const ModelInfo& model);
  // No model: the empty state, no data.
  void reset();
  void clear();
  void add_frame(const TelemetryFrame& frame);

  // One interval as the lanes drew it in the last draw.
  struct Segment {
    int lane = 0;           // 0 = stage 0 · tp 0, then tp ranks, then stages
    RankSpan::Kind kind = RankSpan::Kind::Compute;
    int micro_batch = 0;
    double begin_ms = 0, end_ms = 0;   // forward-pass time before the newest step's end (<= 0)
    bool from_totals = false;          // the rank's totals, no recorded interval
    quint64 step = 0;
    uint64_t bytes = 0;                // a communication interval's payload
  };
  // What the lanes show at a point of the lanes plot (its tooltip), empty where nothing is.
  QString describe_at(const QPoint& pos) const;
  // Per rank, over every step since the model opened: the share of the forward passes spent
  // computing, communicating (all-reduce, send) and in the bubble (waiting, idle).
  struct Shares {
    int tp_rank = 0, pp_stage = 0;
    double compute = 0, communication = 0, bubble = 0;
  };

  int lanes() const { return tp_ * pp_; }
  bool empty_state_shown() const;
  int steps_held() const { return int(steps_.size()); }
  int steps_shown() const;   // at most the "steps" box's value
  void set_steps_shown(int n);
  const std::vector<Segment>& segments() const { return segments_; }
  int micro_batch_labels() const { return labels_used_; }   // "m0", "m1"... drawn
  std::vector<Shares> shares() const;
  // Bytes per token of one tensor-parallel rank (its all-reduces over all stages) and of one
  // rank chain across the stage boundaries: measured over decode steps (per generated token),
  // and the analytic figures. -1 while no decode step was seen.
  double measured_allreduce_per_token() const;
  double measured_stage_transfer_per_token() const;
  double analytic_allreduce_per_token() const;
  double analytic_stage_transfer_per_token() const;
  QString caption() const;
  // Cores the ranks' threads share (default: the machine's hardware threads); with more ranks
  // than cores the caption says that a lane's idle time includes waiting for a core.
  void set_cpu_cores(int cores) { cpu_cores_ = cores; }

  LivePlot* lanes_plot() const { return lanes_plot_; }
  LivePlot* shares_plot() const { return shares_plot_; }
  QTableWidget* volume_table() const { return volume_; }
  QString volume_note() const;
  QPushButton* settings_button() const { return settings_button_; }
  QLabel* empty_label() const { return empty_label_; }

  static QColor kind_color(RankSpan::Kind kind);
  static QString lane_name(int pp_stage, int tp_rank);
  static constexpr int kMaxSteps = 32;

 signals:
  // The empty state's button: open Settings (Parallelism).
  void settings_requested();

 protected:
  void draw() override;
  void restyle() override;

 private:
  struct Totals {
    double compute = 0, communication = 0, forward = 0;
  };
  void rebuild_lane_axes();
  void update_empty_state();
  QCPItemRect* rect_at(size_t i);
  QCPItemText* label_at(size_t i);
  void draw_lanes();
  void draw_shares();
  void fill_volume_table();

  int tp_ = 1, pp_ = 1;
  int cpu_cores_ = static_cast<int>(std::thread::hardware_concurrency());
  ModelInfo model_;
  bool has_model_ = false;
  QStackedWidget* pages_;
  QLabel* empty_label_;
  QPushButton* settings_button_;
  LiveText* caption_;   // changes every draw: never re-lays out the window
  QLabel* legend_;
  QSpinBox* steps_box_;
  LivePlot* lanes_plot_;
  LivePlot* shares_plot_;
  QTableWidget* volume_;
  QLabel* volume_note_;
  QCPBars* compute_bars_;
  QCPBars* comm_bars_;
  QCPBars* bubble_bars_;
  bool replot_all_ = true;
  double span_ms_ = 0;   // the lanes' time axis, -span_ms_ .. 0

  std::deque<StepRecord> steps_;     // the newest steps with rank telemetry
  std::vector<Totals> totals_;       // per lane, since the model opened
  // Decode steps: bytes of tensor-parallel rank 0's all-reduces (all stages) and of its chain's
  // stage transfers, and the tokens they carried; all steps likewise.
  double decode_allreduce_bytes_ = 0, decode_transfer_bytes_ = 0, decode_tokens_ = 0;
  double all_allreduce_bytes_ = 0, all_transfer_bytes_ = 0, all_tokens_ = 0;
  std::vector<Segment> segments_;
  std::vector<QCPItemRect*> rects_;   // reused frame to frame: creating items is costly
  std::vector<QCPItemText*> labels_;
  std::vector<QCPItemStraightLine*> cuts_;
  int labels_used_ = 0;
};

}  // namespace llmwb::ui
