// flat_scroll_bar_style.h — the application's style with scroll bars painted in flat colours.
//
// Streaming views (the completion text, the token chips, the chat transcript) grow every
// frame, so their scroll bars repaint every frame. Fusion paints a scroll bar's groove and
// handle with linear gradients, and Qt's raster engine splits a gradient fill of more than
// ~100 scan lines into pieces for its GUI thread pool: per frame that was a third of the GUI
// thread's time (measured with perf in `llmwb --bench-gui` on stories260K), plus wake-ups of
// pool threads competing with the engine for the cores. Solid fills take the raster engine's
// plain path. Everything else is drawn by the wrapped style.
#pragma once

#include <QProxyStyle>

namespace llmwb::ui {

class FlatScrollBarStyle : public QProxyStyle {
  Q_OBJECT

 public:
  // Takes ownership of `base` (nullptr: the platform's default style).
  explicit FlatScrollBarStyle(QStyle* base = nullptr);

  void drawComplexControl(ComplexControl control, const QStyleOptionComplex* option, QPainter* painter,
                          const QWidget* widget = nullptr) const override;
};

}  // namespace llmwb::ui
