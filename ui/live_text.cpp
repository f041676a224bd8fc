#include "live_text.h"

#include <QEvent>
#include <QPainter>

namespace llmwb::ui {

LiveText::LiveText(int lines, QWidget* parent) : QWidget(parent), lines_(std::max(1, lines)) {
  // Fixed height, any width: nothing about the text can change this widget's size hints.
  setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);
  setFixedHeight(text_height());
  // Opaque: a repaint of the text then stops here instead of repainting every parent below it.
  setAutoFillBackground(true);
}

int LiveText::text_height() const { return lines_ * fontMetrics().lineSpacing(); }

QSize LiveText::sizeHint() const { return {fontMetrics().averageCharWidth() * 30, text_height()}; }

QSize LiveText::minimumSizeHint() const { return {0, text_height()}; }

void LiveText::setText(const QString& text) {
  if (text == text_) return;
  text_ = text;
  setAccessibleName(text_);
  update();
}

void LiveText::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setPen(palette().color(isEnabled() ? QPalette::Active : QPalette::Disabled, QPalette::WindowText));
  p.drawText(rect(), Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, text_);
}

void LiveText::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  // A new font is the one thing that changes the height (once, not per frame).
  if (event->type() == QEvent::FontChange) setFixedHeight(text_height());
}

}  // namespace llmwb::ui
