#include "throughput_chart.h"

#include <qcustomplot.h>

#include <QVBoxLayout>

#include <cmath>
#include <limits>

#include "chart_style.h"
#include "live_plot.h"
#include "static_text_element.h"

namespace llmwb::ui {

ThroughputChart::ThroughputChart(QWidget* parent) : LiveView(parent), plot_(new LivePlot(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(plot_);
  plot_->setMinimumHeight(160);
  plot_->plotLayout()->insertRow(0);
  title_ = new StaticTextElement(plot_, QFont(font().family(), font().pointSize(), QFont::Bold));
  plot_->plotLayout()->addElement(0, 0, title_);

  QCPGraph* decode = plot_->addGraph(plot_->xAxis, plot_->yAxis);
  decode->setName("decode tok/s");
  decode->setPen(QPen(series_color(0), 2));
  QCPGraph* prefill = plot_->addGraph(plot_->xAxis, plot_->yAxis2);
  prefill->setName("prefill tok/s (right axis)");
  prefill->setPen(QPen(series_color(1), 2));
  prefill->setLineStyle(QCPGraph::lsNone);
  prefill->setScatterStyle(disc_scatter(series_color(1), 7));
  plot_->xAxis->setLabel("engine time (s)");
  plot_->yAxis->setLabel("decode tokens/s");
  plot_->yAxis2->setLabel("prefill tokens/s");
  plot_->yAxis2->setVisible(true);
  put_legend_below(plot_);
  plot_->setNoAntialiasingOnDrag(true);
  // On the live layer, the top one: the graphs are clipped to the axis rect and the title has
  // its own row, so it hides nothing.
  decode->setLayer(plot_->live_layer());
  prefill->setLayer(plot_->live_layer());
  title_->setLayer(plot_->live_layer());
  restyle();
  clear();
}

void ThroughputChart::clear() {
  plot_->graph(0)->data()->clear();
  plot_->graph(1)->data()->clear();
  last_time_ = -1.0;
  last_gap_ = 0.0;
  first_time_ = -1.0;
  recent_.clear();
  last_decode_rate_ = last_prefill_rate_ = 0.0;
  ttft_ = tpot_ = -1.0;
  plot_->xAxis->setRange(0, window_seconds_);
  plot_->yAxis->setRange(0, 10);
  plot_->yAxis2->setRange(0, 10);
  update_title();
  replot_all_ = true;
  draw_now();
}

QCustomPlot* ThroughputChart::plot() const { return plot_; }

long ThroughputChart::full_replots() const { return plot_->full_replots(); }

int ThroughputChart::decode_points() const {
  int n = 0;
  for (const QCPGraphData& d : *plot_->graph(0)->data()) n += std::isnan(d.value) ? 0 : 1;
  return n;
}

int ThroughputChart::decode_gaps() const { return plot_->graph(0)->dataCount() - decode_points(); }

void ThroughputChart::add_frame(const TelemetryFrame& frame) {
  if (frame.steps.empty()) return;
  double prefill_s = 0;
  long prefill_tokens = 0;
  for (const StepRecord& s : frame.steps) {
    const double start = s.time - s.step_seconds;
    if (last_time_ >= 0) {
      const double gap = start - last_time_;
      if (gap > kIdleSeconds && gap > 4.0 * last_gap_) {
        // Idle: a NaN point breaks the line, and the rate after the pause is not averaged
        // with the steps before it.
        plot_->graph(0)->addData(last_time_ + 0.5 * gap, std::numeric_limits<double>::quiet_NaN());
        recent_.clear();
      }
      last_gap_ = std::max(0.0, gap);
    }
    last_time_ = s.time;
    const int tokens = s.num_prefill_tokens + s.num_decode_tokens;
    if (tokens == 0) continue;
    prefill_s += s.step_seconds * s.num_prefill_tokens / tokens;
    prefill_tokens += s.num_prefill_tokens;
    recent_.push_back(s);
  }
  const double t = frame.steps.back().time;
  while (!recent_.empty() && recent_.front().time < t - kSmoothingSeconds) recent_.pop_front();
  double decode_s = 0;
  long decode_tokens = 0;
  for (const StepRecord& s : recent_) {
    const int tokens = s.num_prefill_tokens + s.num_decode_tokens;
    decode_s += s.step_seconds * s.num_decode_tokens / tokens;
    decode_tokens += s.num_decode_tokens;
  }
  if (first_time_ < 0) first_time_ = frame.steps.front().time;
  // Points are appended in time order, which QCPDataContainer::add handles without sorting.
  if (decode_tokens > 0 && decode_s > 0) {
    last_decode_rate_ = double(decode_tokens) / decode_s;
    plot_->graph(0)->addData(t, last_decode_rate_);
  }
  if (prefill_tokens > 0 && prefill_s > 0) {
    last_prefill_rate_ = double(prefill_tokens) / prefill_s;
    plot_->graph(1)->addData(t, last_prefill_rate_);
  }
  // The last 30 s are kept; the axes are set when drawing (nobody sees them off screen).
  const double from = std::max(first_time_, t - window_seconds_);
  plot_->graph(0)->data()->removeBefore(from - 1.0);
  plot_->graph(1)->data()->removeBefore(from - 1.0);
  // The figures in the title are read, not watched: four updates a second are plenty, and an
  // unchanged title draws from its cached layout.
  if (!title_since_.isValid() || title_since_.elapsed() >= 250) title_dirty_ = true;
  request_draw();
}

bool ThroughputChart::update_ranges() {
  if (last_time_ < 0 || first_time_ < 0) return false;
  bool changed = set_axis_range(plot_->xAxis, stepped_time_range(first_time_, last_time_, window_seconds_));
  // Value axes in 1-2-5 steps: they change only when the data cross a step.
  bool found = false;
  QCPRange r = plot_->graph(0)->getValueRange(found);
  if (found) changed |= set_axis_range(plot_->yAxis, QCPRange(0, nice_ceiling(r.upper * 1.1)));
  r = plot_->graph(1)->getValueRange(found);
  if (found) changed |= set_axis_range(plot_->yAxis2, QCPRange(0, nice_ceiling(r.upper * 1.1)));
  return changed;
}

void ThroughputChart::set_request_latency(double ttft, double tpot) {
  if (ttft >= 0) ttft_ = ttft;
  if (tpot >= 0) tpot_ = tpot;
  title_dirty_ = true;
  request_draw();
}

QString ThroughputChart::title_text() const { return title_->text(); }

void ThroughputChart::update_title() {
  title_since_.start();
  title_dirty_ = false;
  QStringList parts;
  parts << QString("decode %1 tok/s").arg(last_decode_rate_, 0, 'f', 0);
  parts << QString("prefill %1 tok/s").arg(last_prefill_rate_, 0, 'f', 0);
  parts << (ttft_ >= 0 ? QString("TTFT %1 ms").arg(ttft_ * 1000, 0, 'f', 1) : QString("TTFT –"));
  parts << (tpot_ >= 0 ? QString("TPOT %1 ms").arg(tpot_ * 1000, 0, 'f', 2) : QString("TPOT –"));
  title_->setText(parts.join("   ·   "));
}

void ThroughputChart::draw() {
  if (title_dirty_) update_title();
  const bool everything = update_ranges() || replot_all_;
  replot_all_ = false;
  // Else only the data and the title changed.
  plot_->redraw(everything, QRegion(plot_->axisRect()->rect()) + title_->outerRect());
}

void ThroughputChart::restyle() {
  replot_all_ = true;
  style_plot(plot_);
  title_->setTextColor(palette().color(QPalette::Text));
}

}  // namespace llmwb::ui
