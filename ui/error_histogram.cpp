#include "error_histogram.h"

#include <QEvent>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "chart_style.h"

namespace llmwb::ui {

ErrorHistogram::ErrorHistogram(QWidget* parent) : QWidget(parent), plot_(new QCustomPlot(this)) {
  setObjectName("error_histogram");
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(plot_);
  plot_->setMinimumHeight(150);
  plot_->plotLayout()->insertRow(0);
  plot_->plotLayout()->addElement(0, 0, new QCPTextElement(plot_, QString(), QFont(font().family(), font().pointSize(), QFont::Bold)));
  rebuild();
}

void ErrorHistogram::set_tensor(const TensorError& t) {
  tensor_ = t;
  name_ = QString::fromStdString(t.name);
  rebuild();
}

void ErrorHistogram::clear() {
  tensor_ = {};
  name_.clear();
  rebuild();
}

std::vector<double> ErrorHistogram::counts() const {
  std::vector<double> v;
  auto* bars = qobject_cast<QCPBars*>(plot_->plottable(0));
  if (!bars) return v;
  for (auto it = bars->data()->constBegin(); it != bars->data()->constEnd(); ++it) v.push_back(it->value);
  return v;
}

void ErrorHistogram::rebuild() {
  plot_->clearPlottables();
  auto* title = qobject_cast<QCPTextElement*>(plot_->plotLayout()->element(0, 0));
  title->setText(name_.isEmpty() ? tr("Error histogram (select a tensor)")
                                 : tr("Error of %1 (%2 → %3)")
                                       .arg(name_, QString::fromStdString(tensor_.from), QString::fromStdString(tensor_.to)));
  title->setTextColor(palette().color(QPalette::Text));
  plot_->xAxis->setLabel(tr("quantized − stored"));
  plot_->yAxis->setLabel(tr("elements"));
  const int n = int(tensor_.histogram.size());
  double top = 0.0;
  if (n > 0) {
    auto* bars = new QCPBars(plot_->xAxis, plot_->yAxis);
    const double lo = -tensor_.max_abs, width = n > 0 && tensor_.max_abs > 0 ? 2 * tensor_.max_abs / n : 1.0;
    bars->setWidth(width * 0.92);
    bars->setPen(Qt::NoPen);
    bars->setBrush(series_color(2));
    for (int i = 0; i < n; ++i) {
      const double c = double(tensor_.histogram[size_t(i)]);
      bars->addData(lo + (i + 0.5) * width, c);
      top = std::max(top, c);
    }
    plot_->xAxis->setRange(lo - width / 2, -lo + width / 2);
  } else {
    plot_->xAxis->setRange(-1, 1);
  }
  plot_->yAxis->setRange(0, top > 0 ? top * 1.08 : 1.0);
  style_plot(plot_);
  plot_->replot();
}

void ErrorHistogram::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) rebuild();
}

}  // namespace llmwb::ui
