#include "live_plot.h"

#include <memory>

namespace llmwb::ui {

namespace {

// QCPLayer::drawToPaintBuffer() is protected (QCustomPlot, a friend, calls it while
// replotting). A pointer to it formed through a derived class may call it on any layer; this
// is the one place that does.
struct LayerAccess : QCPLayer {
  static void draw_to_buffer(QCPLayer* layer) { (layer->*&LayerAccess::drawToPaintBuffer)(); }
};

}  // namespace

LivePlot::LivePlot(QWidget* parent) : QCustomPlot(parent) {
  addLayer("live", layer("overlay"), limAbove);
  live_ = layer("live");
  live_->setMode(QCPLayer::lmBuffered);
  layer("overlay")->setMode(QCPLayer::lmLogical);
  connect(this, &QCustomPlot::beforeReplot, this, [this] { ++full_replots_; });
}

void LivePlot::redraw(bool everything, const QRegion& area) {
  if (everything) replot(rpImmediateRefresh);
  else replot_live(area);
}

void LivePlot::replot_live(const QRegion& area) {
  // setupPaintBuffers() gives the last layer, buffered, the last buffer.
  if (hasInvalidatedPaintBuffers() || mPaintBuffers.isEmpty() || mLayers.last() != live_) {
    replot(rpImmediateRefresh);
    return;
  }
  QCPAbstractPaintBuffer* buffer = mPaintBuffers.last().data();
  {
    std::unique_ptr<QCPPainter> painter(buffer->startPainting());
    if (!painter || !painter->isActive()) {
      replot(rpImmediateRefresh);
      return;
    }
    painter->setCompositionMode(QPainter::CompositionMode_Source);
    for (const QRect& r : area) painter->fillRect(r, Qt::transparent);
  }
  buffer->donePainting();
  LayerAccess::draw_to_buffer(live_);
  repaint(area);
}

}  // namespace llmwb::ui
