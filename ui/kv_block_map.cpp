#include "kv_block_map.h"

#include <qcustomplot.h>

#include <QTimer>

#include <QLabel>
#include <QSplitter>
#include <QVBoxLayout>

#include "chart_style.h"
#include "kv_block_grid.h"

namespace llmwb::ui {

KvBlockMap::KvBlockMap(QWidget* parent)
    : QWidget(parent),
      grid_(new KvBlockGrid(this)),
      legend_(new QLabel(this)),
      plot_(new QCustomPlot(this)),
      pacer_(this, [this] {
        grid_->repaint();
        plot_->replot(QCustomPlot::rpImmediateRefresh);
      }) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  legend_->setTextFormat(Qt::PlainText);
  legend_->setWordWrap(true);
  layout->addWidget(legend_);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(grid_);
  split->addWidget(plot_);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  layout->addWidget(split, 1);

  plot_->setMinimumHeight(140);
  grid_->setMinimumHeight(90);
  QCPGraph* used = plot_->addGraph();
  used->setName("blocks in use");
  used->setPen(QPen(series_color(0), 2));
  used->setLineStyle(QCPGraph::lsStepLeft);
  QCPGraph* cached = plot_->addGraph();
  cached->setName("cached only");
  cached->setPen(QPen(series_color(2), 2));
  cached->setLineStyle(QCPGraph::lsStepLeft);
  plot_->xAxis->setLabel("engine time (s)");
  plot_->yAxis->setLabel("blocks");
  put_legend_below(plot_);
  style_plot(plot_);
  clear();
}

void KvBlockMap::clear() {
  grid_->set_blocks({}, 0);
  grid_->update();
  plot_->graph(0)->data()->clear();
  plot_->graph(1)->data()->clear();
  engine_used_ = engine_cached_ = engine_free_ = 0;
  first_time_ = -1.0;
  legend_->setText(tr("KV cache: no model loaded"));
  plot_->xAxis->setRange(0, 10);
  plot_->yAxis->setRange(0, 10);
  plot_->replot();
}

QString KvBlockMap::legend_text() const { return legend_->text(); }

void KvBlockMap::add_frame(const TelemetryFrame& frame) {
  for (const StepRecord& s : frame.steps) {
    plot_->graph(0)->addData(s.time, s.blocks_used);
    plot_->graph(1)->addData(s.time, s.blocks_cached);
  }
  if (!frame.latest) return;
  const StepTelemetry& t = *frame.latest;
  grid_->set_blocks(t.blocks, t.block_size);
  engine_used_ = t.blocks_used;
  engine_cached_ = t.blocks_cached;
  engine_free_ = t.blocks_free;
  const KvBlockGrid::Counts c = grid_->counts();
  const double fill = t.slots_allocated ? 100.0 * double(t.slots_filled) / double(t.slots_allocated) : 0.0;
  legend_->setText(tr("%1 blocks of %2 tokens (%3 MiB %9)   ■ in use %4   ▨ cached %5   □ free %6   "
                      "slots filled %7%   sequences %8")
                       .arg(t.blocks_total)
                       .arg(t.block_size)
                       .arg(double(t.kv_bytes_total) / (1024.0 * 1024.0), 0, 'f', 1)
                       .arg(c.used)
                       .arg(c.cached)
                       .arg(c.free)
                       .arg(fill, 0, 'f', 0)
                       .arg(t.sequences.size())
                       .arg(QString::fromStdString(t.kv_dtype)));
  const double now = t.time;
  if (first_time_ < 0 && !frame.steps.empty()) first_time_ = frame.steps.front().time;
  // The last 30 s; before that the data fill the width.
  const double from = std::max(first_time_, now - 30.0);
  plot_->graph(0)->data()->removeBefore(from - 1.0);
  plot_->graph(1)->data()->removeBefore(from - 1.0);
  const double span = std::max(1.0, now - from);
  plot_->xAxis->setRange(from - 0.02 * span, now + 0.02 * span);
  double top = 4.0;
  for (int g = 0; g < 2; ++g) {
    bool found = false;
    const QCPRange r = plot_->graph(g)->getValueRange(found);
    if (found) top = std::max(top, r.upper * 1.2 + 1.0);
  }
  plot_->yAxis->setRange(0, top);
  if (isVisible()) pacer_.request();
}

void KvBlockMap::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) {
    // The plots' own palettes follow after this event: restyle once they have.
    QTimer::singleShot(0, this, [this] { restyle(); });
  }
}

void KvBlockMap::restyle() {
  style_plot(plot_);
  plot_->replot();
}

void KvBlockMap::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  pacer_.draw_now();
}

}  // namespace llmwb::ui
