#include "message_banner.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QToolButton>

namespace llmwb::ui {

MessageBanner::MessageBanner(QWidget* parent) : QFrame(parent), label_(new QLabel(this)) {
  setObjectName("message_banner");
  setFrameShape(QFrame::StyledPanel);
  setAutoFillBackground(true);
  label_->setWordWrap(true);
  label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* close = new QToolButton(this);
  close->setText("✕");
  close->setAutoRaise(true);
  close->setToolTip(tr("Dismiss"));
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(8, 4, 4, 4);
  layout->addWidget(label_, 1);
  layout->addWidget(close);
  connect(close, &QToolButton::clicked, this, &QWidget::hide);
  hide();
}

void MessageBanner::show_message(Kind kind, const QString& text) {
  kind_ = kind;
  label_->setText(text);
  QPalette pal = palette();
  const bool dark = pal.color(QPalette::Window).lightness() < 128;
  const QColor bg = kind == Kind::Error ? (dark ? QColor(110, 30, 30) : QColor(255, 222, 222))
                                        : (dark ? QColor(30, 60, 100) : QColor(222, 236, 255));
  pal.setColor(QPalette::Window, bg);
  pal.setColor(QPalette::WindowText, dark ? Qt::white : Qt::black);
  setPalette(pal);
  show();
}

QString MessageBanner::text() const { return isVisible() ? label_->text() : QString(); }

}  // namespace llmwb::ui
