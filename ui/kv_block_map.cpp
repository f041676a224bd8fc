#include "kv_block_map.h"

#include <QSplitter>
#include <QVBoxLayout>

#include "chart_style.h"
#include "kv_block_grid.h"
#include "live_plot.h"
#include "live_text.h"

namespace llmwb::ui {

namespace {

// Appends (time, value) to a step line. A run of equal values needs only its first and last
// points, so the last point moves forward instead: the line looks the same and holds one point
// per change in block counts, not one per engine step (thousands a second), which it would
// otherwise stroke on every draw.
void extend_step_line(QCPGraph* graph, double time, double value) {
  QCPGraphDataContainer& data = *graph->data();
  if (data.size() >= 2) {
    auto last = data.end() - 1;
    if (last->value == value && (last - 1)->value == value) {
      last->key = time;  // still the largest key: the container stays sorted
      return;
    }
  }
  data.add(QCPGraphData(time, value));
}

// Drops the points before `time` but the last of them: it starts the step the line is on at
// `time` (which may have begun long before).
void drop_before(QCPGraph* graph, double time) {
  QCPGraphDataContainer& data = *graph->data();
  if (data.isEmpty()) return;
  data.removeBefore(data.findBegin(time, true)->key);
}

}  // namespace

KvBlockMap::KvBlockMap(QWidget* parent)
    : LiveView(parent), grid_(new KvBlockGrid(this)), legend_(new LiveText(3, this)), plot_(new LivePlot(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(legend_);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(grid_);
  split->addWidget(plot_);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  layout->addWidget(split, 1);

  plot_->setMinimumHeight(140);
  grid_->setMinimumHeight(90);
  QCPGraph* used = plot_->addGraph();
  used->setName("blocks in use");
  used->setPen(QPen(series_color(0), 2));
  used->setLineStyle(QCPGraph::lsStepLeft);
  QCPGraph* cached = plot_->addGraph();
  cached->setName("cached only");
  cached->setPen(QPen(series_color(2), 2));
  cached->setLineStyle(QCPGraph::lsStepLeft);
  used->setLayer(plot_->live_layer());
  cached->setLayer(plot_->live_layer());
  // Step lines are horizontal and vertical only: antialiasing changes nothing visible there but
  // costs most of a draw (the 2 px wide lines span the whole width).
  used->setAntialiased(false);
  cached->setAntialiased(false);
  plot_->xAxis->setLabel("engine time (s)");
  plot_->yAxis->setLabel("blocks");
  use_integer_ticks(plot_->yAxis);
  put_legend_below(plot_);
  style_plot(plot_);
  clear();
}

void KvBlockMap::clear() {
  grid_->set_blocks({}, 0);
  latest_.reset();
  latest_shown_ = true;
  plot_->graph(0)->data()->clear();
  plot_->graph(1)->data()->clear();
  engine_used_ = engine_cached_ = engine_free_ = 0;
  first_time_ = last_time_ = -1.0;
  legend_->setText(tr("KV cache: no model loaded"));
  plot_->xAxis->setRange(0, 10);
  plot_->yAxis->setRange(0, 10);
  replot_all_ = true;
  draw_now();
}

QString KvBlockMap::legend_text() const { return legend_->text(); }

void KvBlockMap::add_frame(const TelemetryFrame& frame) {
  for (const StepRecord& s : frame.steps) {
    extend_step_line(plot_->graph(0), s.time, s.blocks_used);
    extend_step_line(plot_->graph(1), s.time, s.blocks_cached);
    last_time_ = std::max(last_time_, s.time);
  }
  if (first_time_ < 0 && !frame.steps.empty()) first_time_ = frame.steps.front().time;
  if (!frame.latest) {
    if (!frame.steps.empty()) request_draw();
    return;
  }
  const StepTelemetry& t = *frame.latest;
  engine_used_ = t.blocks_used;
  engine_cached_ = t.blocks_cached;
  engine_free_ = t.blocks_free;
  latest_ = frame.latest;
  latest_shown_ = false;
  // Off screen the grid waits for the next draw: copying every block's state each frame is
  // work for nobody.
  if (on_screen()) show_snapshot();
  last_time_ = std::max(last_time_, t.time);
  // The last 30 s are kept (dropping points from the front is cheap), on screen or not.
  const double from = std::max(first_time_, last_time_ - 30.0);
  drop_before(plot_->graph(0), from - 1.0);
  drop_before(plot_->graph(1), from - 1.0);
  request_draw();
}

void KvBlockMap::show_snapshot() {
  if (latest_shown_ || !latest_) return;
  latest_shown_ = true;
  const StepTelemetry& t = *latest_;
  grid_->set_blocks(t.blocks, t.block_size);
  std::vector<int64_t> paused;
  for (const SequenceTelemetry& s : t.sequences)
    if (s.state == "paused") paused.push_back(int64_t(s.request_id));
  grid_->set_paused_owners(paused);
  const KvBlockGrid::Counts c = grid_->counts();
  const double fill = t.slots_allocated ? 100.0 * double(t.slots_filled) / double(t.slots_allocated) : 0.0;
  legend_->setText(tr("%1 blocks of %2 tokens (%3 MiB %9)   ■ in use %4   ▨ cached %5   □ free %6   "
                      "slots filled %7%   sequences %8%10")
                       .arg(t.blocks_total)
                       .arg(t.block_size)
                       .arg(double(t.kv_bytes_total) / (1024.0 * 1024.0), 0, 'f', 1)
                       .arg(c.used)
                       .arg(c.cached)
                       .arg(c.free)
                       .arg(fill, 0, 'f', 0)
                       .arg(t.sequences.size())
                       .arg(QString::fromStdString(t.kv_dtype))
                       .arg(paused.empty() ? QString() : tr(" (%1 paused, blocks crossed)").arg(paused.size())));
}

bool KvBlockMap::update_ranges() {
  if (last_time_ < 0 || first_time_ < 0) return false;
  // The last 30 s; before that the data fill the width. In steps, so that most draws
  // redraw the graphs alone.
  bool changed = set_axis_range(plot_->xAxis, stepped_time_range(first_time_, last_time_, 30.0));
  double top = 4.0;
  for (int g = 0; g < 2; ++g) {
    bool found = false;
    const QCPRange r = plot_->graph(g)->getValueRange(found);
    if (found) top = std::max(top, r.upper * 1.2 + 1.0);
  }
  changed |= set_axis_range(plot_->yAxis, QCPRange(0, nice_ceiling(top)));
  return changed;
}

void KvBlockMap::draw() {
  show_snapshot();
  // Here rather than per frame: finding the value range visits every point of the window
  // (one per engine step), work for nobody while the view is off screen.
  const bool everything = update_ranges() || replot_all_;
  replot_all_ = false;
  grid_->repaint();
  plot_->redraw(everything, plot_->axisRect()->rect());
}

void KvBlockMap::restyle() {
  replot_all_ = true;
  style_plot(plot_);
}

}  // namespace llmwb::ui
