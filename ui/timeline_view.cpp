#include "timeline_view.h"

#include <qcustomplot.h>

#include <QSplitter>
#include <QVBoxLayout>

#include "chart_style.h"

namespace llmwb::ui {

namespace {
// Gantt rows, top to bottom.
enum Row { kSample = 0, kDecode = 1, kPrefill = 2, kSchedule = 3 };
}  // namespace

TimelineView::TimelineView(QWidget* parent)
    : LiveView(parent), gantt_(new QCustomPlot(this)), batch_(new QCustomPlot(this)) {
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
  batch_->xAxis->setLabel(tr("step"));
  batch_->yAxis->setLabel(tr("tokens"));
  put_legend_below(batch_);
  style_plot(gantt_);
  style_plot(batch_);
  clear();
}

void TimelineView::clear() {
  steps_.clear();
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
  QVector<double> keys, prefill, decode;
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
      keys << double(s.step);
      prefill << s.num_prefill_tokens;
      decode << s.num_decode_tokens;
    }
    gantt_->xAxis->setRange(earliest * 1.02 - 0.01, 0.0 + std::abs(earliest) * 0.02 + 0.01);
    batch_->xAxis->setRange(keys.front() - 0.6, keys.front() + kSteps - 0.4);
  } else {
    gantt_->xAxis->setRange(-10, 0);
    batch_->xAxis->setRange(0, kSteps);
  }
  for (size_t i = used_bars; i < bars_.size(); ++i) bars_[i]->setVisible(false);
  prefill_bars_->setData(keys, prefill, true);
  decode_bars_->setData(keys, decode, true);
  double top = 1.0;
  for (int i = 0; i < keys.size(); ++i) top = std::max(top, prefill[i] + decode[i]);
  batch_->yAxis->setRange(0, top * 1.15);
  const double width = keys.size() > 1 ? 0.8 : 0.5;
  prefill_bars_->setWidth(width);
  decode_bars_->setWidth(width);
  gantt_->replot(QCustomPlot::rpImmediateRefresh);
  batch_->replot(QCustomPlot::rpImmediateRefresh);
}

void TimelineView::restyle() {
  style_plot(gantt_);
  style_plot(batch_);
}

}  // namespace llmwb::ui
