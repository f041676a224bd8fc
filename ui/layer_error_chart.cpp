#include "layer_error_chart.h"

#include <QComboBox>
#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QRegularExpression>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include <cmath>
#include <limits>

#include "chart_style.h"

namespace llmwb::ui {

namespace {

// The matrices of a Llama layer in forward order, with short legend names.
struct Kind {
  const char* name;
  const char* label;
};
constexpr Kind kKinds[] = {{"attn_q", "q"},          {"attn_k", "k"},      {"attn_v", "v"},
                           {"attn_output", "o"},     {"ffn_gate", "gate"}, {"ffn_up", "up"},
                           {"ffn_down", "down"}};
constexpr int kNumKinds = int(std::size(kKinds));

}  // namespace

LayerErrorChart::LayerErrorChart(QWidget* parent)
    : QWidget(parent), mode_box_(new QComboBox(this)), plot_(new QCustomPlot(this)) {
  setObjectName("layer_error_chart");
  mode_box_->setObjectName("layer_error_mode");
  mode_box_->addItem(tr("Residual stream after each layer"));
  mode_box_->addItem(tr("Matmul outputs by kind"));
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("Relative error of"), this));
  bar->addWidget(mode_box_);
  bar->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(bar);
  layout->addWidget(plot_, 1);
  plot_->setMinimumHeight(160);
  put_legend_below(plot_);   // once: the legend row stays, its entries follow the mode
  connect(mode_box_, &QComboBox::currentIndexChanged, this,
          [this](int i) { set_mode(i == 0 ? Mode::Residual : Mode::Matmuls); });
  rebuild();
}

QString LayerErrorChart::matmul_kind(const QString& weight_name, int* layer) {
  static const QRegularExpression re(R"(^blk\.(\d+)\.([a-z_]+)\.weight$)");
  const auto m = re.match(weight_name);
  if (!m.hasMatch()) return {};
  if (layer) *layer = m.captured(1).toInt();
  return m.captured(2);
}

void LayerErrorChart::set_errors(const std::vector<OutputError>& outputs, int n_layers) {
  outputs_ = outputs;
  n_layers_ = n_layers;
  rebuild();
}

void LayerErrorChart::clear() { set_errors({}, 0); }

void LayerErrorChart::set_mode(Mode mode) {
  if (mode == mode_) return;
  mode_ = mode;
  const QSignalBlocker block(mode_box_);
  mode_box_->setCurrentIndex(mode == Mode::Residual ? 0 : 1);
  rebuild();
}

int LayerErrorChart::series_count() const { return plot_->plottableCount(); }

std::vector<double> LayerErrorChart::series_values(int series) const {
  std::vector<double> v;
  auto* bars = qobject_cast<QCPBars*>(plot_->plottable(series));
  if (!bars) return v;
  for (auto it = bars->data()->constBegin(); it != bars->data()->constEnd(); ++it) v.push_back(it->value);
  return v;
}

void LayerErrorChart::rebuild() {
  plot_->clearPlottables();
  plot_->clearItems();
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  for (int l = 0; l < n_layers_; ++l) ticker->addTick(l, QString::number(l));
  plot_->xAxis->setTicker(ticker);
  plot_->xAxis->setLabel(tr("layer"));
  plot_->yAxis->setLabel(tr("relative error"));
  plot_->xAxis->grid()->setVisible(false);

  double top = 0.0;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (mode_ == Mode::Residual) {
    auto* bars = new QCPBars(plot_->xAxis, plot_->yAxis);
    bars->setName(tr("residual stream"));
    bars->setWidth(0.6);
    bars->setPen(Qt::NoPen);
    bars->setBrush(series_color(0));
    for (const OutputError& o : outputs_) {
      const QString label = QString::fromStdString(o.label);
      if (!label.startsWith("layer ")) continue;
      const int l = label.mid(6).toInt();
      bars->addData(l, o.rel_err);
      top = std::max(top, o.rel_err);
      // The value above each bar while they are few enough to read.
      if (n_layers_ <= 24) {
        auto* text = new QCPItemText(plot_);
        text->position->setCoords(l, o.rel_err);
        text->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
        text->setText(QString::number(o.rel_err, 'f', 4));
        text->setColor(palette().color(QPalette::Text));
        text->setFont(QFont(font().family(), std::max(7, font().pointSize() - 2)));
        text->setClipToAxisRect(false);
      }
    }
  } else {
    std::vector<std::vector<double>> values(kNumKinds, std::vector<double>(size_t(std::max(0, n_layers_)), nan));
    for (const OutputError& o : outputs_) {
      int layer = -1;
      const QString kind = matmul_kind(QString::fromStdString(o.label), &layer);
      for (int k = 0; k < kNumKinds; ++k)
        if (kind == kKinds[k].name && layer >= 0 && layer < n_layers_) values[size_t(k)][size_t(layer)] = o.rel_err;
    }
    auto* group = new QCPBarsGroup(plot_);
    group->setSpacing(0);
    for (int k = 0; k < kNumKinds; ++k) {
      auto* bars = new QCPBars(plot_->xAxis, plot_->yAxis);
      bars->setName(kKinds[k].label);
      bars->setWidth(0.8 / kNumKinds);
      bars->setPen(Qt::NoPen);
      bars->setBrush(series_color(k));
      bars->setBarsGroup(group);
      for (int l = 0; l < n_layers_; ++l) {
        const double v = values[size_t(k)][size_t(l)];
        bars->addData(l, v);
        if (!std::isnan(v)) top = std::max(top, v);
      }
    }
  }
  plot_->xAxis->setRange(-0.6, std::max(1, n_layers_) - 0.4);
  plot_->yAxis->setRange(0.0, top > 0 ? top * 1.15 : 1.0);
  style_plot(plot_);
  plot_->replot();
}

void LayerErrorChart::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) rebuild();
}

}  // namespace llmwb::ui
