// live_view.h — the skeleton every live telemetry view shares (throughput, timeline, KV
// cache, attention): paced drawing, drawing only while on screen, and restyling on palette
// changes.
//
// "On screen" is stricter than QWidget::isVisible(): a dock tabbed behind another stays
// visible to Qt, only moved out of the window, and those views used to redraw every frame
// for nobody (and the attention view kept the engine capturing weights every step). A view
// off screen only marks itself stale and draws once when its dock tab is raised again.
#pragma once

#include <QPointer>
#include <QWidget>

#include "frame_pacer.h"

class QDockWidget;

namespace llmwb::ui {

class LiveView : public QWidget {
  Q_OBJECT

 public:
  explicit LiveView(QWidget* parent = nullptr);

  // Shown, inside its window's area (not a dock tab behind another), and not minimized.
  bool on_screen() const;
  // Draws so far (tests and the GUI benchmark check the rate against the pacer's limit).
  long draw_count() const { return draws_; }
  const FramePacer& pacer() const { return pacer_; }

 signals:
  // The view came on screen or left it (the application delivers results at screen rate
  // only while some live view is on screen).
  void on_screen_toggled(bool on_screen);

 protected:
  // Draws the view now, synchronously (QCustomPlot::rpImmediateRefresh, QWidget::repaint()),
  // so that the pacer can time it.
  virtual void draw() = 0;
  // Re-applies palette colours after a palette change; a draw follows.
  virtual void restyle() {}
  // The view came on screen (true) or left it (false).
  virtual void on_screen_changed(bool) {}

  // New data arrived: drawn at the pacer's next slot while on screen, else once the view
  // comes on screen.
  void request_draw();
  // The data were replaced (cleared, another model): drawn at once when on screen.
  void draw_now();

  void showEvent(QShowEvent* event) override;
  void hideEvent(QHideEvent* event) override;
  void changeEvent(QEvent* event) override;

 private:
  void paced_draw();
  void watch_dock();
  void update_on_screen();

  FramePacer pacer_;
  QPointer<QDockWidget> dock_;
  bool stale_ = true;
  bool was_on_screen_ = false;
  long draws_ = 0;
};

}  // namespace llmwb::ui
