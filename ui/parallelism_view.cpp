#include "parallelism_view.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableWidget>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "chart_style.h"
#include "live_plot.h"
#include "live_text.h"

namespace llmwb::ui {

namespace {

constexpr double kActivationBytes = 4.0;   // the runners exchange f32 activations

QString human_bytes(double b) {
  if (b < 0) return QStringLiteral("–");
  if (b < 1024) return QString("%1 B").arg(b, 0, 'f', 0);
  if (b < 1024.0 * 1024) return QString("%1 KiB").arg(b / 1024, 0, 'f', 2);
  return QString("%1 MiB").arg(b / (1024.0 * 1024), 0, 'f', 2);
}

// The longest of the forward pass and the ranks' own steps: the time every rank's share is of.
double forward_span(const StepRecord& s) {
  double f = s.forward_seconds;
  for (const RankTelemetry& r : *s.ranks) f = std::max(f, r.step_seconds);
  return f;
}

// The smallest 1, 1.5, 2, 3, 4, 5, 6 or 8 x 10^k at or above v: finer than nice_ceiling, so that
// a few steps fill most of the lanes' width.
double fine_ceiling(double v) {
  const double decade = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0})
    if (m * decade >= v * (1 - 1e-9)) return m * decade;
  return 10.0 * decade;
}

}  // namespace

QColor ParallelismView::kind_color(RankSpan::Kind kind) {
  switch (kind) {
    case RankSpan::Kind::Compute: return series_color(0);
    case RankSpan::Kind::AllReduce: return series_color(1);
    case RankSpan::Kind::Send: return series_color(2);
    case RankSpan::Kind::Recv: return series_color(3);
  }
  return series_color(0);
}

QString ParallelismView::lane_name(int pp_stage, int tp_rank) {
  return tr("stage %1 · tp %2").arg(pp_stage).arg(tp_rank);
}

ParallelismView::ParallelismView(QWidget* parent)
    : LiveView(parent),
      pages_(new QStackedWidget(this)),
      empty_label_(new QLabel(this)),
      settings_button_(new QPushButton(tr("Open Settings…"), this)),
      caption_(new LiveText(1, this)),
      legend_(new QLabel(this)),
      steps_box_(new QSpinBox(this)),
      lanes_plot_(new LivePlot(this)),
      shares_plot_(new LivePlot(this)),
      volume_(new QTableWidget(2, 3, this)),
      volume_note_(new QLabel(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(pages_);

  // Page 0: one rank, nothing to show but how to get more.
  auto* empty = new QWidget(pages_);
  auto* el = new QVBoxLayout(empty);
  el->addStretch(1);
  empty_label_->setObjectName("parallelism_empty");
  empty_label_->setWordWrap(true);
  empty_label_->setAlignment(Qt::AlignCenter);
  empty_label_->setMaximumWidth(640);
  el->addWidget(empty_label_, 0, Qt::AlignHCenter);
  settings_button_->setObjectName("parallelism_settings");
  el->addWidget(settings_button_, 0, Qt::AlignHCenter);
  el->addStretch(1);
  connect(settings_button_, &QPushButton::clicked, this, &ParallelismView::settings_requested);
  pages_->addWidget(empty);

  // Page 1: lanes above, shares and volume below.
  auto* content = new QWidget(pages_);
  auto* cl = new QVBoxLayout(content);
  cl->setContentsMargins(0, 0, 0, 0);
  auto* top = new QHBoxLayout;
  caption_->setObjectName("parallelism_caption");
  top->addWidget(caption_, 1);
  top->addWidget(new QLabel(tr("steps shown"), content));
  steps_box_->setObjectName("parallelism_steps");
  steps_box_->setRange(1, kMaxSteps);
  steps_box_->setValue(4);
  steps_box_->setToolTip(tr("How many of the newest steps the lanes show, on one clock"));
  connect(steps_box_, &QSpinBox::valueChanged, this, [this] { draw_now(); });
  top->addWidget(steps_box_);
  cl->addLayout(top);
  legend_->setTextFormat(Qt::RichText);
  cl->addWidget(legend_);
  auto* split = new QSplitter(Qt::Vertical, content);
  split->addWidget(lanes_plot_);
  auto* bottom = new QSplitter(Qt::Horizontal, split);
  bottom->addWidget(shares_plot_);
  auto* volume_box = new QWidget(bottom);
  auto* vl = new QVBoxLayout(volume_box);
  vl->setContentsMargins(0, 0, 0, 0);
  vl->addWidget(volume_, 1);
  volume_note_->setObjectName("parallelism_volume_note");
  volume_note_->setWordWrap(true);
  vl->addWidget(volume_note_);
  bottom->addWidget(volume_box);
  bottom->setStretchFactor(0, 1);
  bottom->setStretchFactor(1, 1);
  split->addWidget(bottom);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  cl->addWidget(split, 1);
  pages_->addWidget(content);
  lanes_plot_->setObjectName("parallelism_lanes");
  lanes_plot_->setMinimumHeight(120);
  shares_plot_->setObjectName("parallelism_shares");
  shares_plot_->setMinimumHeight(100);

  lanes_plot_->xAxis->setLabel(
      tr("milliseconds of forward passes before the newest step's end (time between steps cut at the dashed "
         "lines; gaps: idle)"));
  lanes_plot_->yAxis->grid()->setVisible(false);
  connect(lanes_plot_, &QCustomPlot::mouseMove, this, [this](QMouseEvent* e) {
    const QString text = describe_at(e->pos());
    if (text.isEmpty()) QToolTip::hideText();
    else QToolTip::showText(e->globalPosition().toPoint(), text, lanes_plot_);
  });

  compute_bars_ = new QCPBars(shares_plot_->yAxis, shares_plot_->xAxis);
  comm_bars_ = new QCPBars(shares_plot_->yAxis, shares_plot_->xAxis);
  bubble_bars_ = new QCPBars(shares_plot_->yAxis, shares_plot_->xAxis);
  compute_bars_->setName(tr("compute"));
  comm_bars_->setName(tr("communication (all-reduce, send)"));
  bubble_bars_->setName(tr("bubble (waiting, idle)"));
  comm_bars_->moveAbove(compute_bars_);
  bubble_bars_->moveAbove(comm_bars_);
  for (QCPBars* b : {compute_bars_, comm_bars_, bubble_bars_}) {
    b->setLayer(shares_plot_->live_layer());
    b->setWidth(0.7);
    b->setPen(Qt::NoPen);
  }
  shares_plot_->xAxis->setRange(0, 100);
  shares_plot_->xAxis->setLabel(tr("% of the forward passes since the model opened"));
  shares_plot_->yAxis->grid()->setVisible(false);
  put_legend_below(shares_plot_);

  volume_->setObjectName("parallelism_volume");
  volume_->setHorizontalHeaderLabels({tr("measured\ndecode steps"), tr("measured\nall steps"), tr("analytic")});
  volume_->setVerticalHeaderLabels({tr("all-reduce, one TP rank"), tr("stage hand-off, one rank chain")});
  volume_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  volume_->setSelectionMode(QAbstractItemView::NoSelection);
  volume_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  volume_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c) {
      auto* item = new QTableWidgetItem;
      item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      volume_->setItem(r, c, item);
    }
  volume_->setToolTip(tr("Tensor parallelism all-reduces the outputs of wo and w2 in every layer: 2 x layers x dim "
                         "x 4 bytes (f32) per token for each rank. Pipeline parallelism hands one residual row "
                         "(dim x 4 bytes per token) across each of the stages - 1 boundaries."));
  restyle();
  reset();
}

void ParallelismView::reset() {
  has_model_ = false;
  tp_ = pp_ = 1;
  clear();
}

void ParallelismView::set_layout(int tensor_parallel_size, int pipeline_parallel_size, const ModelInfo& model) {
  tp_ = std::max(1, tensor_parallel_size);
  pp_ = std::max(1, pipeline_parallel_size);
  model_ = model;
  has_model_ = true;
  clear();
}

void ParallelismView::clear() {
  steps_.clear();
  totals_.assign(size_t(lanes()), Totals{});
  decode_allreduce_bytes_ = decode_transfer_bytes_ = decode_tokens_ = 0;
  all_allreduce_bytes_ = all_transfer_bytes_ = all_tokens_ = 0;
  segments_.clear();
  span_ms_ = 0;
  rebuild_lane_axes();
  update_empty_state();
  replot_all_ = true;
  draw_now();
}

bool ParallelismView::empty_state_shown() const { return pages_->currentIndex() == 0; }

int ParallelismView::steps_shown() const { return std::min(int(steps_.size()), steps_box_->value()); }

void ParallelismView::set_steps_shown(int n) { steps_box_->setValue(n); }

void ParallelismView::update_empty_state() {
  if (lanes() > 1) {
    pages_->setCurrentIndex(1);
    return;
  }
  empty_label_->setText(
      has_model_ ? tr("<p><b>The engine runs this model on one rank.</b></p>"
                      "<p>Run with tensor or pipeline parallelism &gt; 1: Settings ▸ Parallelism. The model reopens "
                      "with its layers split across ranks (threads of this process), and this view shows each "
                      "rank's step as a lane (compute, all-reduce, send / receive, idle), the pipeline's bubbles, "
                      "and the bytes exchanged per token against the analytic figure.</p>")
                 : tr("<p><b>No model is open.</b></p><p>Open a model and run with tensor or pipeline parallelism "
                      "&gt; 1: Settings ▸ Parallelism.</p>"));
  pages_->setCurrentIndex(0);
}

void ParallelismView::rebuild_lane_axes() {
  QSharedPointer<QCPAxisTickerText> names(new QCPAxisTickerText);
  for (int p = 0; p < pp_; ++p)
    for (int t = 0; t < tp_; ++t) names->addTick(lanes() - 1 - (p * tp_ + t), lane_name(p, t));
  lanes_plot_->yAxis->setTicker(names);
  lanes_plot_->yAxis->setRange(-0.6, lanes() - 0.05);   // room for the step numbers on top
  shares_plot_->yAxis->setTicker(names);
  shares_plot_->yAxis->setRange(-0.6, lanes() - 0.4);
  auto swatch = [](RankSpan::Kind k, const QString& name) {
    return QString("<span style='color:%1'>&#9632;</span>&nbsp;%2").arg(kind_color(k).name(), name.toHtmlEscaped());
  };
  volume_note_->setText(
      tr("Bytes per token: one TP rank's all-reduces over all stages, and one rank chain's hand-offs across "
         "the stage boundaries; decode steps per generated token, all steps per token computed (prompts "
         "included). Analytic: 2 × %1 layers × %2 × 4 B = %3 all-reduced; %4 boundar%5 × %2 × 4 B = %6 "
         "handed on.")
          .arg(model_.n_layers)
          .arg(model_.dim)
          .arg(human_bytes(2.0 * model_.n_layers * model_.dim * kActivationBytes))
          .arg(pp_ - 1)
          .arg(pp_ == 2 ? "y" : "ies")
          .arg(human_bytes(analytic_stage_transfer_per_token())));
  legend_->setText(swatch(RankSpan::Kind::Compute, tr("compute")) + " &nbsp; " +
                   swatch(RankSpan::Kind::AllReduce, tr("all-reduce (TP)")) + " &nbsp; " +
                   swatch(RankSpan::Kind::Send, tr("send to the next stage")) + " &nbsp; " +
                   swatch(RankSpan::Kind::Recv, tr("receive: waiting for the previous stage (bubble)")) + " &nbsp; " +
                   tr("gaps: idle · lighter shade / m1, m2: odd micro-batches"));
}

void ParallelismView::add_frame(const TelemetryFrame& frame) {
  if (lanes() <= 1) return;
  bool any = false;
  for (const StepRecord& s : frame.steps) {
    if (!s.ranks || s.ranks->empty()) continue;
    any = true;
    const double span = forward_span(s);
    const double tokens = s.num_prefill_tokens + s.num_decode_tokens;
    double allreduce = 0, transfer = 0;
    for (const RankTelemetry& r : *s.ranks) {
      const int lane = r.pp_stage * tp_ + r.tp_rank;
      if (r.tp_rank < 0 || r.tp_rank >= tp_ || r.pp_stage < 0 || r.pp_stage >= pp_) continue;
      Totals& t = totals_[size_t(lane)];
      double compute = 0, comm = 0;
      if (!r.spans.empty()) {
        for (const RankSpan& x : r.spans) {
          const double d = std::max(0.0f, x.end - x.begin);
          if (x.kind == RankSpan::Kind::Compute) compute += d;
          else if (x.kind == RankSpan::Kind::AllReduce || x.kind == RankSpan::Kind::Send) comm += d;
        }
      } else {
        compute = r.compute_seconds;
        comm = r.allreduce_seconds;
      }
      t.compute += compute;
      t.communication += comm;
      t.forward += span;
      if (r.tp_rank == 0) {
        allreduce += double(r.allreduce_bytes);
        transfer += double(r.sendrecv_bytes) / 2.0;   // each hand-off counted by its sender and receiver
      }
    }
    all_allreduce_bytes_ += allreduce;
    all_transfer_bytes_ += transfer;
    all_tokens_ += tokens;
    if (s.num_prefill_tokens == 0 && s.num_decode_tokens > 0) {
      decode_allreduce_bytes_ += allreduce;
      decode_transfer_bytes_ += transfer;
      decode_tokens_ += s.num_decode_tokens;
    }
    steps_.push_back(s);
    if (int(steps_.size()) > kMaxSteps) steps_.pop_front();
  }
  if (any) request_draw();
}

std::vector<ParallelismView::Shares> ParallelismView::shares() const {
  std::vector<Shares> out;
  for (int p = 0; p < pp_; ++p)
    for (int t = 0; t < tp_; ++t) {
      const Totals& x = totals_[size_t(p * tp_ + t)];
      Shares s;
      s.tp_rank = t;
      s.pp_stage = p;
      if (x.forward > 0) {
        s.compute = std::clamp(x.compute / x.forward, 0.0, 1.0);
        s.communication = std::clamp(x.communication / x.forward, 0.0, 1.0 - s.compute);
        s.bubble = 1.0 - s.compute - s.communication;
      }
      out.push_back(s);
    }
  return out;
}

double ParallelismView::measured_allreduce_per_token() const {
  return decode_tokens_ > 0 ? decode_allreduce_bytes_ / decode_tokens_ : -1.0;
}

double ParallelismView::measured_stage_transfer_per_token() const {
  return decode_tokens_ > 0 ? decode_transfer_bytes_ / decode_tokens_ : -1.0;
}

double ParallelismView::analytic_allreduce_per_token() const {
  return tp_ > 1 ? 2.0 * model_.n_layers * model_.dim * kActivationBytes : 0.0;
}

double ParallelismView::analytic_stage_transfer_per_token() const {
  return double(pp_ - 1) * model_.dim * kActivationBytes;
}

QString ParallelismView::describe_at(const QPoint& pos) const {
  const double x = lanes_plot_->xAxis->pixelToCoord(pos.x());
  const double y = lanes_plot_->yAxis->pixelToCoord(pos.y());
  const int row = int(std::lround(y));
  if (std::abs(y - row) > 0.4 || row < 0 || row >= lanes()) return {};
  const int lane = lanes() - 1 - row;
  // Slivers are widened to a few pixels when drawn; so is the hit test.
  const double slack = 3.0 / std::max(1.0, lanes_plot_->axisRect()->width() / lanes_plot_->xAxis->range().size());
  for (const Segment& g : segments_) {
    if (g.lane != lane || x < g.begin_ms - slack || x > g.end_ms + slack) continue;
    const QString kinds[] = {tr("compute"), tr("all-reduce"), tr("send to the next stage"),
                             tr("receive (waiting for the previous stage)")};
    QString text = tr("%1 · step %2\n%3%4: %5 ms")
                       .arg(lane_name(lane / tp_, lane % tp_))
                       .arg(g.step)
                       .arg(kinds[int(g.kind)])
                       .arg(g.from_totals ? tr(" (the step's total)") : tr(", micro-batch %1").arg(g.micro_batch))
                       .arg(g.end_ms - g.begin_ms, 0, 'f', 3);
    if (g.bytes > 0) text += tr(", %1").arg(human_bytes(double(g.bytes)));
    return text;
  }
  return tr("%1: idle").arg(lane_name(lane / tp_, lane % tp_));
}

QString ParallelismView::caption() const { return caption_->text(); }

QString ParallelismView::volume_note() const { return volume_note_->text(); }

QCPItemRect* ParallelismView::rect_at(size_t i) {
  while (rects_.size() <= i) {
    auto* r = new QCPItemRect(lanes_plot_);
    r->setLayer(lanes_plot_->live_layer());
    r->setSelectable(false);
    rects_.push_back(r);
  }
  return rects_[i];
}

QCPItemText* ParallelismView::label_at(size_t i) {
  while (labels_.size() <= i) {
    auto* t = new QCPItemText(lanes_plot_);
    t->setLayer(lanes_plot_->live_layer());
    t->setSelectable(false);
    t->setPositionAlignment(Qt::AlignCenter);
    QFont f = font();
    f.setPointSizeF(std::max(6.0, f.pointSizeF() * 0.8));
    t->setFont(f);
    labels_.push_back(t);
  }
  return labels_[i];
}

void ParallelismView::draw() {
  if (lanes() <= 1) return;
  draw_lanes();
  draw_shares();
  fill_volume_table();
  replot_all_ = false;
}

void ParallelismView::draw_lanes() {
  segments_.clear();
  std::vector<int> micro_batches;   // per segment: its rank's micro-batches in that step
  struct Window {
    double begin_ms, end_ms;
    quint64 step;
  };
  std::vector<Window> windows;      // the steps' forward passes, back to back, newest ending at 0
  const int n = steps_shown();
  double earliest = 0;
  for (int k = 0; k < n; ++k) {
    const StepRecord& s = steps_[steps_.size() - 1 - size_t(k)];
    const double start = earliest - forward_span(s) * 1000.0;
    windows.push_back({start, earliest, s.step});
    for (const RankTelemetry& r : *s.ranks) {
      if (r.tp_rank < 0 || r.tp_rank >= tp_ || r.pp_stage < 0 || r.pp_stage >= pp_) continue;
      const int lane = r.pp_stage * tp_ + r.tp_rank;
      auto add = [&](RankSpan::Kind kind, int mb, double b, double e, bool totals, uint64_t bytes = 0) {
        if (e <= b) return;
        segments_.push_back({lane, kind, mb, start + b * 1000.0, start + e * 1000.0, totals, s.step, bytes});
        micro_batches.push_back(r.micro_batches);
      };
      if (!r.spans.empty()) {
        for (const RankSpan& x : r.spans) add(x.kind, x.micro_batch, x.begin, x.end, false, x.bytes);
      } else {
        // Totals only: the amounts in causal order (wait for the input, compute, all-reduce).
        double t = 0;
        add(RankSpan::Kind::Recv, 0, t, t + r.recv_seconds, true);
        t += r.recv_seconds;
        add(RankSpan::Kind::Compute, 0, t, t + r.compute_seconds, true);
        t += r.compute_seconds;
        add(RankSpan::Kind::AllReduce, 0, t, t + r.allreduce_seconds, true, r.allreduce_bytes);
      }
    }
    earliest = start;
  }
  // The axis spans the steps shown, rounded up to 1, 1.5, 2, 3, 4, 5, 6 or 8 x 10^k, and keeps its
  // range (and the cached axis layers) until the steps outgrow it or fill less than 60 % of it.
  const double needed = n > 0 ? std::max(1e-3, -earliest * 1.02) : 10.0;
  if (needed > span_ms_ || needed < 0.6 * span_ms_) span_ms_ = fine_ceiling(needed);
  const double span_ms = span_ms_;
  bool changed = set_axis_range(lanes_plot_->xAxis, QCPRange(-span_ms, 0.02 * span_ms));
  // Intervals far shorter than a pixel still get a sliver, so that every all-reduce shows.
  const double min_ms = span_ms / 1500.0;
  const double px_per_ms = lanes_plot_->axisRect()->width() / (span_ms * 1.02);
  size_t used = 0, labels = 0;
  int mb_labels = 0;
  for (size_t i = 0; i < segments_.size(); ++i) {
    const Segment& g = segments_[i];
    const double y = lanes() - 1 - g.lane;
    QCPItemRect* r = rect_at(used++);
    r->setVisible(true);
    r->topLeft->setCoords(g.begin_ms, y + 0.38);
    r->bottomRight->setCoords(std::max(g.end_ms, g.begin_ms + min_ms), y - 0.38);
    QColor c = kind_color(g.kind);
    if (g.micro_batch % 2 == 1) c = c.lighter(135);
    if (g.kind == RankSpan::Kind::Recv) {
      r->setBrush(QBrush(c, Qt::BDiagPattern));
      r->setPen(QPen(c));
    } else {
      r->setBrush(c);
      r->setPen(Qt::NoPen);
    }
    if (micro_batches[i] > 1 && (g.end_ms - g.begin_ms) * px_per_ms >= 22 && g.kind != RankSpan::Kind::Recv) {
      QCPItemText* t = label_at(labels++);
      ++mb_labels;
      t->setVisible(true);
      t->setColor(Qt::white);
      t->position->setCoords((g.begin_ms + g.end_ms) / 2, y);
      t->setText(QString("m%1").arg(g.micro_batch));
    }
  }
  // Where the time between two steps (scheduling, sampling, slow motion) was cut, and the steps'
  // numbers above them where there is room.
  size_t cuts = 0;
  for (const Window& w : windows) {
    if (w.begin_ms > -span_ms * 0.999) {
      while (cuts_.size() <= cuts) {
        auto* line = new QCPItemStraightLine(lanes_plot_);
        line->setLayer(lanes_plot_->live_layer());
        line->setSelectable(false);
        cuts_.push_back(line);
      }
      QCPItemStraightLine* line = cuts_[cuts++];
      line->setVisible(true);
      QColor ink = palette().color(QPalette::Text);
      ink.setAlpha(150);
      line->setPen(QPen(ink, 1, Qt::DashLine));
      line->point1->setCoords(w.begin_ms, 0);
      line->point2->setCoords(w.begin_ms, 1);
    }
    if ((w.end_ms - w.begin_ms) * px_per_ms >= 60) {
      QCPItemText* t = label_at(labels++);
      t->setVisible(true);
      t->setColor(palette().color(QPalette::Text));
      t->position->setCoords((w.begin_ms + w.end_ms) / 2, lanes() - 0.3);
      t->setText(tr("step %1").arg(w.step));
    }
  }
  for (size_t i = cuts; i < cuts_.size(); ++i) cuts_[i]->setVisible(false);
  for (size_t i = used; i < rects_.size(); ++i) rects_[i]->setVisible(false);
  for (size_t i = labels; i < labels_.size(); ++i) labels_[i]->setVisible(false);
  labels_used_ = mb_labels;

  // The caption: the layout and the newest step.
  QString text = tr("TP %1 × PP %2 · %3 ranks (threads)").arg(tp_).arg(pp_).arg(lanes());
  if (!steps_.empty()) {
    const StepRecord& s = steps_.back();
    int mb = 1;
    for (const RankTelemetry& r : *s.ranks) mb = std::max(mb, r.micro_batches);
    text += tr(" · step %1: forward %2 ms, %3 prompt + %4 decode tokens, %5 micro-batch%6")
                .arg(s.step)
                .arg(s.forward_seconds * 1000.0, 0, 'f', 2)
                .arg(s.num_prefill_tokens)
                .arg(s.num_decode_tokens)
                .arg(mb)
                .arg(mb == 1 ? "" : "es");
    if (s.ranks->front().spans.empty()) text += tr(" · per-rank totals (no intervals recorded)");
    if (cpu_cores_ > 0 && lanes() > cpu_cores_)
      text += tr(" · %1 ranks share %2 cores: idle time in a lane includes waiting for a core").arg(lanes()).arg(cpu_cores_);
  } else {
    text += tr(" · no step yet: generate something");
  }
  caption_->setText(text);
  lanes_plot_->redraw(changed || replot_all_, lanes_plot_->axisRect()->rect());
}

void ParallelismView::draw_shares() {
  // Keys ascending (QCPBars stacks by key lookup): the last lane is plotted at 0.
  const std::vector<Shares> all = shares();
  QVector<double> keys, compute, comm, bubble;
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    keys << lanes() - 1 - (it->pp_stage * tp_ + it->tp_rank);
    compute << 100.0 * it->compute;
    comm << 100.0 * it->communication;
    bubble << 100.0 * it->bubble;
  }
  compute_bars_->setData(keys, compute, true);
  comm_bars_->setData(keys, comm, true);
  bubble_bars_->setData(keys, bubble, true);
  shares_plot_->redraw(replot_all_, shares_plot_->axisRect()->rect());
}

void ParallelismView::fill_volume_table() {
  auto set = [this](int row, int col, const QString& text) {
    if (volume_->item(row, col)->text() != text) volume_->item(row, col)->setText(text);
  };
  const double all_ar = all_tokens_ > 0 ? all_allreduce_bytes_ / all_tokens_ : -1.0;
  const double all_pp = all_tokens_ > 0 ? all_transfer_bytes_ / all_tokens_ : -1.0;
  if (tp_ > 1) {
    set(0, 0, human_bytes(measured_allreduce_per_token()));
    set(0, 1, human_bytes(all_ar));
    set(0, 2, human_bytes(analytic_allreduce_per_token()));
  } else {
    for (int c = 0; c < 3; ++c) set(0, c, tr("none (TP 1)"));
  }
  if (pp_ > 1) {
    set(1, 0, human_bytes(measured_stage_transfer_per_token()));
    set(1, 1, human_bytes(all_pp));
    set(1, 2, human_bytes(analytic_stage_transfer_per_token()));
  } else {
    for (int c = 0; c < 3; ++c) set(1, c, tr("none (PP 1)"));
  }
}

void ParallelismView::restyle() {
  replot_all_ = true;
  style_plot(lanes_plot_);
  style_plot(shares_plot_);
  compute_bars_->setBrush(kind_color(RankSpan::Kind::Compute));
  comm_bars_->setBrush(kind_color(RankSpan::Kind::AllReduce));
  bubble_bars_->setBrush(QBrush(kind_color(RankSpan::Kind::Recv), Qt::BDiagPattern));
  bubble_bars_->setPen(QPen(kind_color(RankSpan::Kind::Recv)));
}

}  // namespace llmwb::ui
