#include "timeline_view.h"

#include <QSplitter>
#include <QVBoxLayout>

#include "chart_style.h"
#include "live_plot.h"

namespace llmwb::ui {

namespace {
// Gantt rows, top to bottom.
enum Row { kSample = 0, kDecode = 1, kPrefill = 2, kSchedule = 3 };
}  // namespace

TimelineView::TimelineView(QWidget* parent)
    : LiveView(parent), gantt_(new LivePlot(this)), batch_(new LivePlot(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(gantt_);
  split->addWidget(batch_);
  layout->addWidget(split);
  gantt_->setMinimumHeight(130);
  batch_->setMinimumHeight(130);

  QSharedPointer<QCPAxisTickerText> rows(new QCPAxisTickerText);
  rows->addTick(kSchedule, tr("schedule"));
  rows->addTick(kPrefill, tr("prefill"));
  rows->addTick(kDecode, tr("decode"));
  rows->addTick(kSample, tr("sample"));
  gantt_->yAxis->setTicker(rows);
  gantt_->yAxis->setRange(-0.6, 3.6);
  gantt_->xAxis->setLabel(tr("milliseconds before the newest step ended"));

  prefill_bars_ = new QCPBars(batch_->xAxis, batch_->yAxis);
  prefill_bars_->setName(tr("prefill tokens"));
  prefill_bars_->setBrush(series_color(1));
  prefill_bars_->setPen(Qt::NoPen);
  decode_bars_ = new QCPBars(batch_->xAxis, batch_->yAxis);
  decode_bars_->setName(tr("decode tokens"));
  decode_bars_->setBrush(series_color(0));
  decode_bars_->setPen(Qt::NoPen);
  decode_bars_->moveAbove(prefill_bars_);
  paused_bars_ = new QCPBars(batch_->xAxis, batch_->yAxis);
  paused_bars_->setName(tr("paused sequences (held, KV kept)"));
  paused_bars_->setBrush(QBrush(series_color(3), Qt::BDiagPattern));
  paused_bars_->setPen(QPen(series_color(3)));
  paused_bars_->moveAbove(decode_bars_);
  prefill_bars_->setLayer(batch_->live_layer());
  decode_bars_->setLayer(batch_->live_layer());
  paused_bars_->setLayer(batch_->live_layer());
  batch_->xAxis->setLabel(tr("steps before the newest"));
  batch_->yAxis->setLabel(tr("tokens"));
  use_integer_ticks(batch_->yAxis);
  put_legend_below(batch_);
  style_plot(gantt_);
  style_plot(batch_);
  clear();
}

void TimelineView::clear() {
  steps_.clear();
  replot_all_ = true;
  draw_now();
}

void TimelineView::add_frame(const TelemetryFrame& frame) {
  for (const StepRecord& s : frame.steps) {
    steps_.push_back(s);
    if (int(steps_.size()) > kSteps) steps_.pop_front();
  }
  request_draw();
}

void TimelineView::draw() {
  bool gantt_changed = false;
  QVector<double> keys, prefill, decode, paused;
  size_t used_bars = 0;
  if (!steps_.empty()) {
    const double end = steps_.back().time;
    const double begin = steps_.front().time - steps_.front().step_seconds;
    double earliest = (begin - end) * 1000.0;
    // Phases far shorter than a pixel still get a sliver, so that every row shows its steps.
    const double min_seconds = std::max(1e-7, (end - begin) / 1500.0);
    auto bar = [&](int row, double from_s, double to_s, const QColor& color, const QString& tip) {
      if (to_s <= from_s) return;
      to_s = std::max(to_s, from_s + min_seconds);
      if (used_bars == bars_.size()) {
        bars_.push_back(new QCPItemRect(gantt_));
        bars_.back()->setLayer(gantt_->live_layer());
        bars_.back()->setPen(Qt::NoPen);
        bars_.back()->setSelectable(false);
      }
      QCPItemRect* r = bars_[used_bars++];
      r->setVisible(true);
      r->topLeft->setCoords((from_s - end) * 1000.0, row + 0.35);
      r->bottomRight->setCoords((to_s - end) * 1000.0, row - 0.35);
      r->setBrush(color);
      r->setObjectName(tip);
      earliest = std::min(earliest, (from_s - end) * 1000.0);
    };
    for (const StepRecord& s : steps_) {
      double t = s.time - s.step_seconds;
      bar(kSchedule, t, t + s.schedule_seconds, series_color(3), "schedule");
      t += s.schedule_seconds;
      // One forward pass serves the whole batch; its time is split by token share so that the
      // strip shows how much of the pass went to prompt chunks and how much to decoding.
      const int tokens = s.num_prefill_tokens + s.num_decode_tokens;
      const double prefill_part = tokens ? s.forward_seconds * s.num_prefill_tokens / tokens : 0.0;
      bar(kPrefill, t, t + prefill_part, series_color(1), "prefill");
      bar(kDecode, t + prefill_part, t + s.forward_seconds, series_color(0), "decode");
      t += s.forward_seconds;
      bar(kSample, t, t + s.sample_seconds, series_color(2), "sample");
      keys << double(s.step) - double(steps_.back().step);
      prefill << s.num_prefill_tokens;
      decode << s.num_decode_tokens;
      paused << s.num_paused;
    }
    const double span_ms = nice_ceiling(std::abs(earliest) * 1.02);
    gantt_changed = set_axis_range(gantt_->xAxis, QCPRange(-span_ms, 0.02 * span_ms));
  } else {
    gantt_changed = set_axis_range(gantt_->xAxis, QCPRange(-10, 0));
  }
  bool batch_changed = set_axis_range(batch_->xAxis, QCPRange(0.4 - kSteps, 0.6));
  for (size_t i = used_bars; i < bars_.size(); ++i) bars_[i]->setVisible(false);
  prefill_bars_->setData(keys, prefill, true);
  decode_bars_->setData(keys, decode, true);
  paused_bars_->setData(keys, paused, true);
  double top = 1.0;
  for (int i = 0; i < keys.size(); ++i) top = std::max(top, prefill[i] + decode[i] + paused[i]);
  batch_changed |= set_axis_range(batch_->yAxis, QCPRange(0, nice_ceiling(top * 1.15)));
  const double width = keys.size() > 1 ? 0.8 : 0.5;
  prefill_bars_->setWidth(width);
  decode_bars_->setWidth(width);
  paused_bars_->setWidth(width);
  gantt_->redraw(gantt_changed || replot_all_, gantt_->axisRect()->rect());
  batch_->redraw(batch_changed || replot_all_, batch_->axisRect()->rect());
  replot_all_ = false;
}

void TimelineView::restyle() {
  replot_all_ = true;
  style_plot(gantt_);
  style_plot(batch_);
}

}  // namespace llmwb::ui
