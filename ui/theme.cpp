#include "theme.h"

#include <QApplication>
#include <QPalette>
#include <QStyle>
#include <QStyleFactory>

#include "flat_scroll_bar_style.h"

namespace llmwb::ui {

namespace {

QPalette dark_palette() {
  QPalette p;
  const QColor window(45, 45, 48), base(30, 30, 32), text(220, 220, 220), disabled(127, 127, 127);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, QColor(55, 55, 60));
  p.setColor(QPalette::ToolTipBase, QColor(60, 60, 64));
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::PlaceholderText, disabled);
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, window);
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, Qt::red);
  p.setColor(QPalette::Link, QColor(86, 180, 233));
  p.setColor(QPalette::Highlight, QColor(0, 114, 178));
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::Disabled, QPalette::Text, disabled);
  p.setColor(QPalette::Disabled, QPalette::ButtonText, disabled);
  p.setColor(QPalette::Disabled, QPalette::WindowText, disabled);
  return p;
}

}  // namespace

void apply_theme(const QString& theme) {
  // The platform palette as the application started, kept for "system".
  static const QPalette system_palette = QApplication::palette();
  // The platform's style as the application started, wrapped for "system".
  static const QString system_style = QApplication::style()->name();
  const QString style = theme == "dark" || theme == "light" ? QStringLiteral("Fusion") : system_style;
  // Scroll bars in flat colours whatever the theme (flat_scroll_bar_style.h says why).
  auto* current = qobject_cast<FlatScrollBarStyle*>(QApplication::style());
  if (!current || current->baseStyle()->name().compare(style, Qt::CaseInsensitive) != 0)
    QApplication::setStyle(new FlatScrollBarStyle(QStyleFactory::create(style)));
  if (theme == "dark") QApplication::setPalette(dark_palette());
  else if (theme == "light") QApplication::setPalette(QApplication::style()->standardPalette());
  else QApplication::setPalette(system_palette);
}

}  // namespace llmwb::ui
