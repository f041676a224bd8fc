#include "attention_heatmap.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QVBoxLayout>

#include "chart_style.h"
#include "live_text.h"
#include "token_text.h"

namespace llmwb::ui {

AttentionHeatmap::AttentionHeatmap(QWidget* parent)
    : LiveView(parent),
      layer_(new QSpinBox(this)),
      head_(new QComboBox(this)),
      queries_(new QSpinBox(this)),
      status_(new LiveText(1, this)),
      plot_(new QCustomPlot(this)),
      map_(nullptr) {
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
  auto* scale = new QCPColorScale(plot_);
  plot_->plotLayout()->addElement(0, 1, scale);
  scale->setLabel(tr("weight"));
  map_->setColorScale(scale);
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
  scale->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
  plot_->xAxis->setLabel(tr("context (key positions)"));
  plot_->yAxis->setLabel(tr("generated token (query)"));
  plot_->yAxis->setRangeReversed(true);  // newest token at the bottom, like reading order
  plot_->xAxis->setTickLabelRotation(60);
  restyle();

  connect(layer_, &QSpinBox::valueChanged, this, &AttentionHeatmap::emit_capture);
  connect(queries_, &QSpinBox::valueChanged, this, &AttentionHeatmap::emit_capture);
  connect(head_, &QComboBox::currentIndexChanged, this, [this] { draw_now(); });
}

int AttentionHeatmap::layer() const { return layer_->value(); }
int AttentionHeatmap::max_queries() const { return queries_->value(); }
int AttentionHeatmap::head() const { return head_->currentData().toInt(); }

void AttentionHeatmap::set_model(int n_layers, int n_heads, const QStringList& vocabulary) {
  vocabulary_ = vocabulary;
  layer_->setRange(0, std::max(0, n_layers - 1));
  head_->blockSignals(true);
  head_->clear();
  head_->addItem(tr("mean over heads"), -1);
  for (int h = 0; h < n_heads; ++h) head_->addItem(tr("head %1").arg(h), h);
  head_->blockSignals(false);
  snapshot_.reset();
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
  style_plot(plot_);
  const QColor fg = plot_->palette().color(QPalette::Text);
  QCPAxis* scale_axis = map_->colorScale()->axis();
  scale_axis->setTickLabelColor(fg);
  scale_axis->setLabelColor(fg);
  scale_axis->setBasePen(QPen(fg));
  scale_axis->setTickPen(QPen(fg));
  scale_axis->setSubTickPen(QPen(fg));
}

void AttentionHeatmap::draw() {
  const AttentionSnapshot* s = snapshot_.get();
  if (!s || s->context_len <= 0 || s->query_positions.empty() || s->n_heads <= 0) {
    map_->data()->setSize(1, 1);
    map_->data()->setCell(0, 0, 0);
    plot_->replot(QCustomPlot::rpImmediateRefresh);
    return;
  }
  const int nq = int(s->query_positions.size());
  const int nk = s->context_len;
  const int h = head();
  map_->data()->setSize(nk, nq);
  map_->data()->setRange(QCPRange(0, nk - 1), QCPRange(0, nq - 1));
  for (int q = 0; q < nq; ++q) {
    for (int k = 0; k < nk; ++k) {
      double w = 0.0;
      if (h >= 0 && h < s->n_heads) {
        w = s->weights[(size_t(q) * s->n_heads + h) * nk + k];
      } else {
        for (int hh = 0; hh < s->n_heads; ++hh) w += s->weights[(size_t(q) * s->n_heads + hh) * nk + k];
        w /= s->n_heads;
      }
      map_->data()->setCell(k, q, w);
    }
  }
  map_->rescaleDataRange(true);

  // Token text on the axes; with a long context only every n-th key is labelled.
  auto label = [&](int pos) {
    const int id = pos < int(s->context_tokens.size()) ? s->context_tokens[size_t(pos)] : -1;
    return display_token(vocabulary_, id);
  };
  QSharedPointer<QCPAxisTickerText> xt(new QCPAxisTickerText);
  // Rotated labels need ~14 px each across, horizontal ones ~16 px each down.
  const int width_px = std::max(100, plot_->axisRect()->width());
  const int height_px = std::max(60, plot_->axisRect()->height());
  const int every = std::max(1, (nk * 14 + width_px - 1) / width_px);
  for (int k = 0; k < nk; k += every) xt->addTick(k, label(k));
  plot_->xAxis->setTicker(xt);
  QSharedPointer<QCPAxisTickerText> yt(new QCPAxisTickerText);
  const int qevery = std::max(1, (nq * 16 + height_px - 1) / height_px);
  for (int q = 0; q < nq; q += qevery) {
    const int pos = s->query_positions[size_t(q)];
    yt->addTick(q, QString("%1 %2").arg(label(pos)).arg(pos));
  }
  plot_->yAxis->setTicker(yt);
  plot_->xAxis->setRange(-0.5, nk - 0.5);
  plot_->yAxis->setRange(-0.5, nq - 0.5);
  status_->setText(tr("request %1, layer %2, %3 queries over %4 keys")
                       .arg(s->request_id)
                       .arg(s->layer)
                       .arg(nq)
                       .arg(nk));
  plot_->replot(QCustomPlot::rpImmediateRefresh);
}

}  // namespace llmwb::ui
