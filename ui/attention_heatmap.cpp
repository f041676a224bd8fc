#include "attention_heatmap.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>

#include "chart_style.h"
#include "live_axis.h"
#include "live_plot.h"
#include "live_text.h"
#include "token_text.h"

namespace llmwb::ui {

AttentionHeatmap::AttentionHeatmap(QWidget* parent)
    : LiveView(parent),
      layer_(new QSpinBox(this)),
      head_(new QComboBox(this)),
      queries_(new QSpinBox(this)),
      status_(new LiveText(1, this)),
      plot_(new LivePlot(this)),
      map_(nullptr),
      scale_(nullptr) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("Layer"), this));
  bar->addWidget(layer_);
  bar->addWidget(new QLabel(tr("Head"), this));
  bar->addWidget(head_);
  bar->addWidget(new QLabel(tr("Last tokens"), this));
  bar->addWidget(queries_);
  bar->addWidget(status_, 1);
  layout->addLayout(bar);
  layout->addWidget(plot_, 1);
  layer_->setRange(0, 0);
  queries_->setRange(1, 128);
  queries_->setValue(24);
  head_->addItem(tr("mean over heads"), -1);
  status_->setText(tr("Generate text to see where each new token looks."));

  map_ = new QCPColorMap(plot_->xAxis, plot_->yAxis);
  scale_ = new QCPColorScale(plot_);
  plot_->plotLayout()->addElement(0, 1, scale_);
  scale_->setLabel(tr("weight"));
  map_->setColorScale(scale_);
  // Viridis (perceptually uniform, readable in grey and by colour-blind viewers), from five of
  // its published anchor colours; QCustomPlot 2.1 has no preset for it.
  QCPColorGradient viridis;
  viridis.clearColorStops();
  viridis.setColorStopAt(0.0, QColor(68, 1, 84));
  viridis.setColorStopAt(0.25, QColor(59, 82, 139));
  viridis.setColorStopAt(0.5, QColor(33, 145, 140));
  viridis.setColorStopAt(0.75, QColor(94, 201, 98));
  viridis.setColorStopAt(1.0, QColor(253, 231, 37));
  map_->setGradient(viridis);
  map_->setInterpolate(false);
  auto* margins = new QCPMarginGroup(plot_);
  plot_->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
  scale_->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
  plot_->xAxis->setLabel(tr("context (key positions)"));
  plot_->yAxis->setLabel(tr("generated token (query)"));
  plot_->yAxis->setRangeReversed(true);  // newest token at the bottom, like reading order
  plot_->xAxis->setTickLabelRotation(60);
  key_ticker_.reset(new QCPAxisTickerText);
  query_ticker_.reset(new QCPAxisTickerText);
  plot_->xAxis->setTicker(key_ticker_);
  plot_->yAxis->setTicker(query_ticker_);
  // What changes with every token: the map, both token axes and the weight axis (its range is
  // the snapshot's). Grid lines would lie under the map: none.
  map_->setLayer(plot_->live_layer());
  for (QCPAxis* axis : {plot_->xAxis, plot_->yAxis, scale_->axis()}) {
    axis->setLayer(plot_->live_layer());
    axis->grid()->setVisible(false);
  }
  // More than the distinct labels an axis shows at once (about a hundred keys, a window of
  // queries), so that no label is rendered twice while it stays; a label is a small pixmap.
  keep_tick_labels(plot_->xAxis, 512);
  keep_tick_labels(plot_->yAxis, 256);
  keep_tick_labels(scale_->axis(), 64);
  restyle();

  connect(layer_, &QSpinBox::valueChanged, this, &AttentionHeatmap::emit_capture);
  connect(queries_, &QSpinBox::valueChanged, this, &AttentionHeatmap::emit_capture);
  connect(head_, &QComboBox::currentIndexChanged, this, [this] { draw_now(); });
}

int AttentionHeatmap::layer() const { return layer_->value(); }
int AttentionHeatmap::max_queries() const { return queries_->value(); }
int AttentionHeatmap::head() const { return head_->currentData().toInt(); }

void AttentionHeatmap::set_head(int head) { head_->setCurrentIndex(std::max(0, head_->findData(head))); }

long AttentionHeatmap::full_replots() const { return plot_->full_replots(); }

void AttentionHeatmap::set_model(int n_layers, int n_heads, const QStringList& vocabulary) {
  vocabulary_ = vocabulary;
  layer_->setRange(0, std::max(0, n_layers - 1));
  head_->blockSignals(true);
  head_->clear();
  head_->addItem(tr("mean over heads"), -1);
  for (int h = 0; h < n_heads; ++h) head_->addItem(tr("head %1").arg(h), h);
  head_->blockSignals(false);
  snapshot_.reset();
  replot_all_ = true;
  draw_now();
}

void AttentionHeatmap::set_snapshot(std::shared_ptr<const AttentionSnapshot> snapshot) {
  if (!snapshot || snapshot == snapshot_) return;
  snapshot_ = std::move(snapshot);
  request_draw();
}

void AttentionHeatmap::emit_capture() { emit capture_changed(shown_, layer(), max_queries()); }

void AttentionHeatmap::on_screen_changed(bool on) {
  shown_ = on;
  emit_capture();
}

void AttentionHeatmap::restyle() {
  replot_all_ = true;
  style_plot(plot_);
  const QColor fg = plot_->palette().color(QPalette::Text);
  QCPAxis* scale_axis = map_->colorScale()->axis();
  scale_axis->setTickLabelColor(fg);
  scale_axis->setLabelColor(fg);
  scale_axis->setBasePen(QPen(fg));
  scale_axis->setTickPen(QPen(fg));
  scale_axis->setSubTickPen(QPen(fg));
}

void AttentionHeatmap::show_nothing() {
  map_->data()->setSize(1, 1);
  map_->data()->setCell(0, 0, 0);
  key_ticker_->clear();
  query_ticker_->clear();
  key_labels_.clear();
  query_labels_.clear();
  key_every_ = query_every_ = 0;
  shown_keys_ = 0;
  plot_->xAxis->setRange(-0.5, 0.5);
  plot_->yAxis->setRange(-0.5, 0.5);
  replot_all_ = true;
}

void AttentionHeatmap::show_snapshot(const AttentionSnapshot& s) {
  const int nq = int(s.query_positions.size());
  const int nk = s.context_len;
  const int h = head();
  // Keys in chunks of 1-2-5 steps, about a sixteenth of the context (at least 4 tokens).
  const int chunk = std::max(4, int(nice_ceiling(nk / 16.0)));
  shown_keys_ = (nk + chunk - 1) / chunk * chunk;
  QCPColorMapData* data = map_->data();
  data->setSize(shown_keys_, nq);  // reallocates only when the size changes
  data->setRange(QCPRange(0, shown_keys_ - 1), QCPRange(0, nq - 1));
  const size_t row = size_t(s.n_heads) * size_t(nk);
  for (int q = 0; q < nq; ++q) {
    const float* w = s.weights.data() + size_t(q) * row;
    for (int k = 0; k < nk; ++k) {
      double v = 0.0;
      if (h >= 0 && h < s.n_heads) {
        v = w[size_t(h) * nk + k];
      } else {
        for (int hh = 0; hh < s.n_heads; ++hh) v += w[size_t(hh) * nk + k];
        v /= s.n_heads;
      }
      data->setCell(k, q, v);
    }
    // Keys the context has not reached: no weight, as for the causal padding.
    for (int k = nk; k < shown_keys_; ++k) data->setCell(k, q, 0.0);
  }
  map_->rescaleDataRange(true);
  plot_->xAxis->setRange(-0.5, shown_keys_ - 0.5);
  plot_->yAxis->setRange(-0.5, nq - 0.5);

  // Token text on the axes; with a long context only every n-th key is labelled. Rotated labels
  // need ~14 px each across, horizontal ones ~16 px each down. A ticker is refilled only when
  // its labels change (QCustomPlot recomputes a margin then).
  auto label = [&](int pos) {
    const int id = pos < int(s.context_tokens.size()) ? s.context_tokens[size_t(pos)] : -1;
    return display_token(vocabulary_, id);
  };
  const int width_px = std::max(100, plot_->axisRect()->width());
  const int height_px = std::max(60, plot_->axisRect()->height());
  const int every = std::max(1, (shown_keys_ * 14 + width_px - 1) / width_px);
  QStringList keys;
  for (int k = 0; k < nk; k += every) keys << label(k);
  if (every != key_every_ || keys != key_labels_) {
    QVector<double> at;
    for (int k = 0; k < nk; k += every) at << k;
    key_ticker_->setTicks(at, QVector<QString>(keys.begin(), keys.end()));
    key_labels_ = keys;
    key_every_ = every;
  }
  const int qevery = std::max(1, (nq * 16 + height_px - 1) / height_px);
  QStringList queries;
  for (int q = 0; q < nq; q += qevery) {
    const int pos = s.query_positions[size_t(q)];
    queries << QString("%1 %2").arg(label(pos)).arg(pos);
  }
  if (qevery != query_every_ || queries != query_labels_) {
    QVector<double> at;
    for (int q = 0; q < nq; q += qevery) at << q;
    query_ticker_->setTicks(at, QVector<QString>(queries.begin(), queries.end()));
    query_labels_ = queries;
    query_every_ = qevery;
  }
  status_->setText(tr("request %1, layer %2, %3 queries over %4 keys")
                       .arg(s.request_id)
                       .arg(s.layer)
                       .arg(nq)
                       .arg(nk));
}

void AttentionHeatmap::draw() {
  const AttentionSnapshot* s = snapshot_.get();
  if (!s || s->context_len <= 0 || s->query_positions.empty() || s->n_heads <= 0) show_nothing();
  else show_snapshot(*s);
  bool everything = replot_all_;
  replot_all_ = false;
  // The axes drawn on the live layer need their tick vectors for the new labels, which only a
  // full replot would set up; a label wider than its margin needs the layout of one.
  if (!everything)
    everything = !prepare_live_axes(plot_->axisRect()) || !prepare_live_axes(scale_->axis()->axisRect());
  plot_->redraw(everything, QRegion(plot_->rect()));
}

}  // namespace llmwb::ui
