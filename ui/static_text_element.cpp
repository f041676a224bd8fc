#include "static_text_element.h"

namespace llmwb::ui {

StaticTextElement::StaticTextElement(QCustomPlot* plot, const QFont& font) : QCPTextElement(plot, QString(), font) {
  laid_out_.setTextFormat(Qt::PlainText);
  laid_out_.setPerformanceHint(QStaticText::AggressiveCaching);
}

void StaticTextElement::draw(QCPPainter* painter) {
  const QFont font = mainFont();
  if (mText != text_ || font != font_) {
    text_ = mText;
    font_ = font;
    laid_out_.setText(mText);
    laid_out_.prepare(QTransform(), font);
  }
  painter->setFont(font);
  painter->setPen(QPen(mainTextColor()));
  const QSizeF size = laid_out_.size();
  const QPointF top_left(mRect.center().x() + 1 - size.width() / 2, mRect.center().y() + 1 - size.height() / 2);
  painter->drawStaticText(top_left, laid_out_);
  // What QCPTextElement::selectTest hit-tests against.
  mTextBoundingRect = QRectF(top_left, size).toAlignedRect();
}

}  // namespace llmwb::ui
