// live_plot.h — a QCustomPlot whose topmost layer, the one with the data that change every
// frame, can be redrawn alone while only the part of the widget it covers is repainted.
//
// QCPLayer::replot() redraws one buffered layer, but then schedules a repaint of the whole
// widget: the paint composites every layer buffer over the whole widget and hands all of it to
// the window system. Under software rendering (Xvfb) that costs more than drawing the data. A
// live chart knows where its data can appear (the axis rect, a title), and repaints only there.
#pragma once

#include <qcustomplot.h>

namespace llmwb::ui {

class LivePlot : public QCustomPlot {
  Q_OBJECT

 public:
  explicit LivePlot(QWidget* parent = nullptr);

  // A buffered layer above all others, for what changes every frame. The overlay layer (unused
  // by the charts, buffered by default) joins the cached buffer below it, so that a paint
  // composites two buffers.
  QCPLayer* live_layer() const { return live_; }

  // Redraws the live layer inside `area` (its buffer is cleared there first; everything on the
  // layer must lie inside) and repaints that area now. Replots everything instead when the
  // buffers are not valid (resized, never drawn).
  void replot_live(const QRegion& area);

  // What a live view's draw does: replots every layer if `everything` (an axis range changed,
  // the data were replaced, the style changed), else the live layer inside `area`.
  void redraw(bool everything, const QRegion& area);

  // Replots (all layers) so far, by whatever cause (resizes too); tests check that data
  // updates leave the cached layers alone.
  long full_replots() const { return full_replots_; }

 private:
  QCPLayer* live_;
  long full_replots_ = 0;
};

}  // namespace llmwb::ui
