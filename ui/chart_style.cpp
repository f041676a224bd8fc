#include "chart_style.h"

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

namespace llmwb::ui {

void style_plot(QCustomPlot* plot) {
  const QPalette pal = plot->palette();
  const QColor bg = pal.color(QPalette::Base);
  const QColor fg = pal.color(QPalette::Text);
  QColor grid = fg;
  grid.setAlpha(40);
  plot->setBackground(bg);
  // Live charts redraw many times a second next to a busy engine: one polyline call per graph,
  // and no antialiasing for grid lines, axes and items (straight lines gain nothing from it).
  plot->setPlottingHint(QCP::phFastPolylines, true);
  plot->setNotAntialiasedElements(QCP::aeGrid | QCP::aeSubGrid | QCP::aeAxes | QCP::aeZeroLine | QCP::aeItems);
  for (QCPAxisRect* rect : plot->axisRects()) {
    for (QCPAxis* axis : rect->axes()) {
      axis->setBasePen(QPen(fg));
      axis->setTickPen(QPen(fg));
      axis->setSubTickPen(QPen(fg));
      axis->setTickLabelColor(fg);
      axis->setLabelColor(fg);
      axis->grid()->setPen(QPen(grid, 1, Qt::DotLine));
      axis->grid()->setZeroLinePen(QPen(grid));
    }
  }
  if (plot->legend) {
    plot->legend->setBrush(QBrush(bg));
    plot->legend->setBorderPen(QPen(grid));
    plot->legend->setTextColor(fg);
  }
}

void put_legend_below(QCustomPlot* plot) {
  plot->legend->setVisible(true);
  plot->axisRect()->insetLayout()->take(plot->legend);
  // A centred row: empty cells either side take the spare width.
  auto* row = new QCPLayoutGrid;
  plot->plotLayout()->addElement(plot->plotLayout()->rowCount(), 0, row);
  row->addElement(0, 0, new QCPLayoutElement(plot));
  row->addElement(0, 1, plot->legend);
  row->addElement(0, 2, new QCPLayoutElement(plot));
  row->setColumnStretchFactors({1.0, 0.001, 1.0});
  plot->legend->setFillOrder(QCPLegend::foColumnsFirst);
  plot->legend->setBorderPen(Qt::NoPen);
  plot->legend->setMargins(QMargins(4, 0, 4, 2));
  plot->plotLayout()->setRowStretchFactor(plot->plotLayout()->rowCount() - 1, 0.001);
}

QCPScatterStyle disc_scatter(const QColor& color, int diameter) {
  // One pixel of transparent border each side, so that the antialiased edge is not cut off.
  QPixmap disc(diameter + 2, diameter + 2);
  disc.fill(Qt::transparent);
  QPainter p(&disc);
  p.setRenderHint(QPainter::Antialiasing);
  p.setPen(Qt::NoPen);
  p.setBrush(color);
  p.drawEllipse(QRectF(1, 1, diameter, diameter));
  return QCPScatterStyle(disc);
}

double nice_ceiling(double v) {
  if (!(v > 1.0)) return 1.0;  // also NaN
  const double decade = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * decade >= v) return m * decade;
  return 10.0 * decade;
}

QCPRange stepped_time_range(double first, double last, double window) {
  const double span = last - first;
  if (span <= window) {
    const double chunk = nice_ceiling(span / 10.0);
    return {first, first + std::max(1.0, std::ceil(span / chunk) * chunk)};
  }
  const double chunk = nice_ceiling(window / 10.0);
  const double from = first + std::floor((last - window - first) / chunk) * chunk;
  return {from, from + window + chunk};
}

bool set_axis_range(QCPAxis* axis, const QCPRange& range) {
  if (axis->range() == range) return false;
  axis->setRange(range);
  return true;
}

QColor series_color(int index) {
  static const QColor colors[] = {QColor(0, 114, 178), QColor(230, 159, 0), QColor(0, 158, 115),
                                  QColor(204, 121, 167), QColor(86, 180, 233), QColor(213, 94, 0),
                                  QColor(240, 228, 66)};
  return colors[index % int(std::size(colors))];
}

QColor id_color(qint64 id) {
  // Successive ids get hues 0.618 turns apart, so neighbours never look alike.
  const double golden = 0.6180339887498949;
  const double hue = std::fmod(0.12 + double(id) * golden, 1.0);
  return QColor::fromHsvF(float(hue), 0.55f, 0.85f);
}

void use_integer_ticks(QCPAxis* axis) {
  QSharedPointer<QCPAxisTickerFixed> ticker(new QCPAxisTickerFixed);
  ticker->setTickStep(1.0);
  ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  axis->setTicker(ticker);
}

}  // namespace llmwb::ui
