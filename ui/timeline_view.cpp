#include "timeline_view.h"

#include <QEvent>
#include <QFontMetrics>
#include <QResizeEvent>
#include <QSplitter>
#include <QVBoxLayout>

#include "chart_style.h"
#include "live_plot.h"

namespace llmwb::ui {

namespace {
// Gantt rows, top to bottom.
enum Row { kSample = 0, kDecode = 1, kPrefill = 2, kDraft = 3, kSchedule = 4 };

// A duration for the caption: milliseconds with one decimal from 1 ms, microseconds below.
QString duration_text(double seconds) {
  if (seconds >= 1e-3) return QString("%1 ms").arg(1e3 * seconds, 0, 'f', 1);
  return QString("%1 µs").arg(1e6 * seconds, 0, 'f', 0);
}
}  // namespace

TimelineView::TimelineView(QWidget* parent)
    : LiveView(parent), gantt_(new LivePlot(this)), batch_(new LivePlot(this)), spec_(new LivePlot(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(gantt_);
  split->addWidget(batch_);
  split->addWidget(spec_);
  layout->addWidget(split);
  spec_->setObjectName("speculation_chart");
  spec_->setMinimumHeight(110);
  gantt_->setMinimumHeight(130);
  batch_->setMinimumHeight(130);

  QSharedPointer<QCPAxisTickerText> rows(new QCPAxisTickerText);
  rows->addTick(kSchedule, tr("schedule"));
  rows->addTick(kDraft, tr("draft"));
  rows->addTick(kPrefill, tr("prefill"));
  rows->addTick(kDecode, tr("decode / verify"));
  rows->addTick(kSample, tr("sample"));
  gantt_->yAxis->setTicker(rows);
  gantt_->yAxis->setRange(-0.6, 4.6);
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
  acceptance_bars_ = new QCPBars(spec_->xAxis, spec_->yAxis);
  acceptance_bars_->setName(tr("acceptance at draft position"));
  acceptance_bars_->setBrush(series_color(4));
  acceptance_bars_->setPen(Qt::NoPen);
  acceptance_bars_->setLayer(spec_->live_layer());
  mean_length_ = spec_->addGraph(spec_->xAxis2, spec_->yAxis2);
  mean_length_->setName(tr("mean acceptance length per step (top, right axes)"));
  mean_length_->setPen(QPen(series_color(0), 2));
  mean_length_->setLineStyle(QCPGraph::lsNone);
  mean_length_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 4));
  mean_length_->setLayer(spec_->live_layer());
  spec_->xAxis->setLabel(tr("draft position"));
  spec_->yAxis->setLabel(tr("accepted"));
  spec_->yAxis->setRange(0, 1.05);
  spec_->xAxis2->setVisible(true);
  spec_->yAxis2->setVisible(true);
  spec_->yAxis2->setLabel(tr("tokens / verification"));
  use_integer_ticks(spec_->xAxis);
  put_legend_below(spec_);
  style_plot(gantt_);
  style_plot(batch_);
  style_plot(spec_);
  fit_speculation_chart(spec_->height());
  spec_->installEventFilter(this);
  clear();
}

TimelineView::~TimelineView() {
  // A legend row out of the layout goes back, so that the plot deletes it with the rest.
  if (spec_legend_row_ && !spec_legend_row_->layout()) spec_->plotLayout()->addElement(spec_->plotLayout()->rowCount(), 0, spec_legend_row_);
}

bool TimelineView::eventFilter(QObject* watched, QEvent* event) {
  // Before the plot's own resize handling, which lays it out again and replots.
  if (watched == spec_ && event->type() == QEvent::Resize && fit_speculation_chart(static_cast<QResizeEvent*>(event)->size().height()))
    replot_all_ = true;
  return LiveView::eventFilter(watched, event);
}

bool TimelineView::fit_speculation_chart(int height) {
  const int density = height < kTinyHeight ? 2 : height < kCompactHeight ? 1 : 0;
  const QString left = tr("accepted"), right = tr("tokens / verification");
  // What the axis rect keeps of the height: the rest is tick numbers, the caption, the legend.
  const int axis_height = height - (density == 2 ? 52 : 88);
  auto fits = [&](const QCPAxis* axis, const QString& title) {
    return QFontMetrics(axis->labelFont()).horizontalAdvance(title) + 6 <= axis_height;
  };
  const QString left_title = fits(spec_->yAxis, left) ? left : QString();
  const QString right_title = fits(spec_->yAxis2, right) ? right : QString();
  if (density == spec_density_ && spec_->yAxis->label() == left_title && spec_->yAxis2->label() == right_title)
    return false;
  spec_density_ = density;
  QSharedPointer<QCPAxisTickerFixed> rate(new QCPAxisTickerFixed);
  rate->setTickStep(density == 0 ? 0.2 : density == 1 ? 0.5 : 1.0);
  rate->setScaleStrategy(QCPAxisTickerFixed::ssNone);
  spec_->yAxis->setTicker(rate);
  spec_->yAxis2->ticker()->setTickCount(density == 0 ? 5 : density == 1 ? 3 : 2);
  spec_->yAxis->setLabel(left_title);
  spec_->yAxis2->setLabel(right_title);
  spec_->xAxis2->setTickLabels(density < 2);
  // The legend's row (put_legend_below) leaves the layout, so that its height goes to the data.
  QCPLayoutGrid* grid = spec_->plotLayout();
  if (!spec_legend_row_) spec_legend_row_ = spec_->legend->layout();
  const bool shown = grid->hasElement(grid->rowCount() - 1, 0) && grid->element(grid->rowCount() - 1, 0) == spec_legend_row_;
  if (density == 2 && shown) {
    grid->take(spec_legend_row_);
    grid->simplify();
  } else if (density < 2 && !shown) {
    grid->addElement(grid->rowCount(), 0, spec_legend_row_);
    grid->setRowStretchFactor(grid->rowCount() - 1, 0.001);
  }
  spec_->legend->setVisible(density < 2);
  return true;
}

void TimelineView::clear() {
  steps_.clear();
  acceptance_at_.clear();
  spec_caption_ = tr("speculative decoding is off (Settings)");
  replot_all_ = true;
  draw_now();
}

void TimelineView::add_frame(const TelemetryFrame& frame) {
  for (const StepRecord& s : frame.steps) {
    steps_.push_back(s);
    if (int(steps_.size()) > kSteps) steps_.pop_front();
  }
  if (frame.latest && !frame.latest->speculative_method.empty()) {
    const SpeculativeStats& s = frame.latest->speculative_total;
    acceptance_at_.clear();
    for (size_t i = 0; i < s.drafted_at.size(); ++i) acceptance_at_.push_back(s.acceptance_at(i));
    spec_caption_ = tr("%1: %2 guesses, %3% accepted, mean acceptance length %4")
                        .arg(QString::fromStdString(frame.latest->speculative_method))
                        .arg(s.drafted)
                        .arg(100.0 * s.acceptance_rate(), 0, 'f', 1)
                        .arg(s.mean_acceptance_length(), 0, 'f', 2);
    if (frame.latest->draft_p_min > 0)   // the draft stops at guesses it gives less than this
      spec_caption_ += tr(", stops below p %1").arg(frame.latest->draft_p_min, 0, 'f', 2);
    if (const auto& c = frame.latest->spec_cost)   // what an adaptive k weighs to switch off (spec/spec_cost.h)
      spec_caption_ += tr("; costs: a target pass %1 + %2 a token, a draft pass %3")
                           .arg(duration_text(c->fixed_seconds))
                           .arg(duration_text(c->per_token_seconds))
                           .arg(duration_text(c->draft_pass_seconds));
  }
  request_draw();
}

void TimelineView::draw() {
  bool gantt_changed = false;
  QVector<double> keys, prefill, decode, paused, spec_keys, spec_lengths;
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
      bar(kDraft, t, t + s.draft_seconds, series_color(4), "draft");
      t += s.draft_seconds;
      // One forward pass serves the whole batch; its time is split by token share so that the
      // strip shows how much of the pass went to prompt chunks and how much to decoding.
      const int tokens = s.num_prefill_tokens + s.num_decode_tokens;
      const double prefill_part = tokens ? s.forward_seconds * s.num_prefill_tokens / tokens : 0.0;
      bar(kPrefill, t, t + prefill_part, series_color(1), "prefill");
      // A step whose sequences carried guesses verifies them in this pass.
      if (s.spec_drafts > 0) bar(kDecode, t + prefill_part, t + s.forward_seconds, series_color(5), "verify");
      else bar(kDecode, t + prefill_part, t + s.forward_seconds, series_color(0), "decode");
      t += s.forward_seconds;
      bar(kSample, t, t + s.sample_seconds, series_color(2), "sample");
      keys << double(s.step) - double(steps_.back().step);
      prefill << s.num_prefill_tokens;
      decode << s.num_decode_tokens;
      if (s.spec_drafts > 0) {
        spec_keys << keys.back();
        spec_lengths << 1.0 + double(s.spec_accepted) / s.spec_drafts;
      }
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
  // Speculation: acceptance per position (bottom / left) and per-step mean length (top / right).
  QVector<double> positions, rates;
  for (size_t i = 0; i < acceptance_at_.size(); ++i) {
    positions << double(i + 1);
    rates << acceptance_at_[i];
  }
  acceptance_bars_->setData(positions, rates, true);
  acceptance_bars_->setWidth(0.7);
  mean_length_->setData(spec_keys, spec_lengths, true);
  bool spec_changed = set_axis_range(spec_->xAxis, QCPRange(0.4, std::max<double>(4, positions.size()) + 0.6));
  spec_changed |= set_axis_range(spec_->xAxis2, QCPRange(0.4 - kSteps, 0.6));
  double longest = 2.0;
  for (double l : spec_lengths) longest = std::max(longest, l);
  spec_changed |= set_axis_range(spec_->yAxis2, QCPRange(0, nice_ceiling(longest * 1.1)));
  if (spec_->xAxis->label() != spec_caption_) {
    spec_->xAxis->setLabel(spec_caption_);
    spec_changed = true;
  }
  paused_bars_->setWidth(width);
  gantt_->redraw(gantt_changed || replot_all_, gantt_->axisRect()->rect());
  batch_->redraw(batch_changed || replot_all_, batch_->axisRect()->rect());
  spec_->redraw(spec_changed || replot_all_, spec_->axisRect()->rect());
  replot_all_ = false;
}

void TimelineView::restyle() {
  replot_all_ = true;
  style_plot(gantt_);
  style_plot(batch_);
  style_plot(spec_);
}

}  // namespace llmwb::ui
