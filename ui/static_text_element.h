// static_text_element.h — a QCustomPlot text element (a chart title) that lays its text out
// once per change, not once per draw.
//
// QCPTextElement draws with QPainter::drawText(rect, flags, text), which itemizes and shapes
// the text again on every draw: for a live chart's title, a sixth of the cost of redrawing its
// data layer. This one keeps a QStaticText of the current text and font, and draws the cached
// glyphs; a text that changes at every draw costs what it did before. One line, centred.
#pragma once

#include <qcustomplot.h>

#include <QStaticText>

namespace llmwb::ui {

class StaticTextElement : public QCPTextElement {
  Q_OBJECT

 public:
  StaticTextElement(QCustomPlot* plot, const QFont& font);

 protected:
  void draw(QCPPainter* painter) override;

 private:
  QStaticText laid_out_;
  QString text_;  // the text and font laid_out_ was prepared for
  QFont font_;
};

}  // namespace llmwb::ui
