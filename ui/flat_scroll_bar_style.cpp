#include "flat_scroll_bar_style.h"

#include <QPainter>
#include <QStyleOptionSlider>

namespace llmwb::ui {

FlatScrollBarStyle::FlatScrollBarStyle(QStyle* base) : QProxyStyle(base) {}

void FlatScrollBarStyle::drawComplexControl(ComplexControl control, const QStyleOptionComplex* option,
                                            QPainter* painter, const QWidget* widget) const {
  const auto* bar = qstyleoption_cast<const QStyleOptionSlider*>(option);
  if (control != CC_ScrollBar || !bar) return QProxyStyle::drawComplexControl(control, option, painter, widget);
  const QPalette& pal = bar->palette;
  painter->save();
  painter->setRenderHint(QPainter::Antialiasing, false);
  // Groove: one solid colour between window and base.
  const QColor window = pal.color(QPalette::Window), base = pal.color(QPalette::Base);
  const QColor groove((window.red() + base.red()) / 2, (window.green() + base.green()) / 2,
                      (window.blue() + base.blue()) / 2);
  painter->fillRect(bar->rect, groove);
  // Arrow buttons where the wrapped style places them (clicks keep working as before).
  const bool horizontal = bar->orientation == Qt::Horizontal;
  const struct {
    SubControl part;
    PrimitiveElement arrow;
  } buttons[] = {{SC_ScrollBarSubLine, horizontal ? PE_IndicatorArrowLeft : PE_IndicatorArrowUp},
                 {SC_ScrollBarAddLine, horizontal ? PE_IndicatorArrowRight : PE_IndicatorArrowDown}};
  for (const auto& b : buttons) {
    if (!(bar->subControls & b.part)) continue;
    QStyleOption arrow = *bar;
    arrow.rect = subControlRect(control, bar, b.part, widget).adjusted(2, 2, -2, -2);
    if (arrow.rect.isValid()) drawPrimitive(b.arrow, &arrow, painter, widget);
  }
  // Handle: a solid bar, darker while hovered or dragged.
  if ((bar->subControls & SC_ScrollBarSlider) && bar->maximum > bar->minimum) {
    const QRect handle = subControlRect(control, bar, SC_ScrollBarSlider, widget)
                             .adjusted(horizontal ? 0 : 2, horizontal ? 2 : 0, horizontal ? 0 : -2, horizontal ? -2 : 0);
    const bool active = (bar->activeSubControls & SC_ScrollBarSlider) && (bar->state & (State_MouseOver | State_Sunken));
    painter->fillRect(handle, active ? pal.color(QPalette::Dark) : pal.color(QPalette::Mid));
  }
  painter->restore();
}

}  // namespace llmwb::ui
