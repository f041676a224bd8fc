#include "live_view.h"

#include <QDockWidget>
#include <QEvent>
#include <QTimer>

namespace llmwb::ui {

LiveView::LiveView(QWidget* parent) : QWidget(parent), pacer_(this, [this] { paced_draw(); }) {}

bool LiveView::on_screen() const {
  if (!isVisible()) return false;
  const QWidget* w = window();
  if (w->isMinimized()) return false;
  // QMainWindow parks a dock tab that is not current at negative coordinates outside the
  // window (and a docked view is never partly outside otherwise).
  return QRect(mapTo(w, QPoint(0, 0)), size()).intersects(w->rect());
}

void LiveView::request_draw() {
  stale_ = true;
  if (on_screen()) pacer_.request();
}

void LiveView::draw_now() {
  stale_ = true;
  if (on_screen()) pacer_.draw_now();
}

void LiveView::paced_draw() {
  // A draw scheduled while on screen may come due after the view left it.
  if (!on_screen()) return;
  stale_ = false;
  ++draws_;
  draw();
}

void LiveView::watch_dock() {
  QDockWidget* dock = nullptr;
  for (QWidget* p = parentWidget(); p && !dock; p = p->parentWidget()) dock = qobject_cast<QDockWidget*>(p);
  if (dock == dock_) return;
  if (dock_) disconnect(dock_, nullptr, this, nullptr);
  dock_ = dock;
  // Raising or lowering a dock tab moves the dock in or out of the window without any event
  // reaching the widgets inside it; the dock itself announces it. The geometry is settled
  // once the event loop turns.
  if (dock_)
    connect(dock_, &QDockWidget::visibilityChanged, this,
            [this] { QTimer::singleShot(0, this, &LiveView::update_on_screen); });
}

void LiveView::update_on_screen() {
  const bool now = on_screen();
  if (now != was_on_screen_) {
    was_on_screen_ = now;
    on_screen_changed(now);
    emit on_screen_toggled(now);
  }
  if (now && stale_) pacer_.draw_now();
}

void LiveView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  // Drawing more often than the screen refreshes shows nothing more.
  pacer_.set_min_interval_ms(FramePacer::frame_interval_ms(screen()));
  watch_dock();
  update_on_screen();
}

void LiveView::hideEvent(QHideEvent* event) {
  QWidget::hideEvent(event);
  update_on_screen();
}

void LiveView::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) {
    // The plots' own palettes follow after this event: restyle once they have.
    QTimer::singleShot(0, this, [this] {
      restyle();
      draw_now();
    });
  } else if (event->type() == QEvent::ParentChange) {
    watch_dock();
  } else if (event->type() == QEvent::WindowStateChange) {
    update_on_screen();
  }
}

}  // namespace llmwb::ui
