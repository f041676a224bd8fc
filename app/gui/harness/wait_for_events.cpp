#include "wait_for_events.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QThread>

namespace llmwb::gui {

bool wait_for_events(const std::function<bool()>& done, double seconds) {
  QElapsedTimer t;
  t.start();
  while (!done()) {
    if (t.elapsed() > seconds * 1000) return false;
    QApplication::processEvents(QEventLoop::AllEvents, 20);
    QThread::msleep(5);
  }
  return true;
}

}  // namespace llmwb::gui
