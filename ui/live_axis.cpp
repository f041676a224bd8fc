#include "live_axis.h"

#include <qcustomplot.h>

namespace llmwb::ui {

namespace {

// The members below are protected; a pointer to member formed through a derived class may be
// used on any object of the base (the same device as LivePlot's LayerAccess). Nothing here is
// ever constructed.
struct AxisAccess : QCPAxis {
  static QCPAxisPainterPrivate* painter(QCPAxis* axis) { return axis->*&AxisAccess::mAxisPainter; }
  // The margin the axis needs for its current tick labels (cached by QCustomPlot until the
  // labels change).
  static int margin(QCPAxis* axis) { return (axis->*&AxisAccess::calculateMargin)(); }
};

struct AxisPainterAccess : QCPAxisPainterPrivate {
  static void set_cache_size(QCPAxisPainterPrivate* painter, int n) {
    (painter->*&AxisPainterAccess::mLabelCache).setMaxCost(n);
  }
};

int margin_on(QCPAxisRect* rect, QCPAxis::AxisType side) {
  const QMargins m = rect->margins();
  switch (side) {
    case QCPAxis::atLeft: return m.left();
    case QCPAxis::atRight: return m.right();
    case QCPAxis::atTop: return m.top();
    case QCPAxis::atBottom: return m.bottom();
  }
  return 0;
}

}  // namespace

void keep_tick_labels(QCPAxis* axis, int labels) {
  AxisPainterAccess::set_cache_size(AxisAccess::painter(axis), labels);
}

bool prepare_live_axes(QCPAxisRect* rect) {
  // QCPAxisRect's preparation phase calls setupTickVectors() on each of its axes.
  rect->update(QCPLayoutElement::upPreparation);
  for (QCPAxis* axis : rect->axes()) {
    if (!axis->visible()) continue;
    // The margin laid out may be wider (a margin group, longer labels before), never narrower.
    if (AxisAccess::margin(axis) > margin_on(rect, axis->axisType())) return false;
  }
  return true;
}

}  // namespace llmwb::ui
