#include "frame_pacer.h"

#include <QScreen>
#include <QTimer>

#include <algorithm>
#include <cmath>
#include <ctime>

namespace llmwb::ui {

FramePacer::FramePacer(QObject* owner, std::function<void()> draw, double budget, int min_interval_ms)
    : owner_(owner), draw_(std::move(draw)), budget_(budget), min_interval_ms_(min_interval_ms) {}

int FramePacer::frame_interval_ms(const QScreen* screen) {
  const double hz = screen ? screen->refreshRate() : 0.0;
  return std::max(4, int(1000.0 / (hz >= 1.0 ? hz : 60.0)));
}

void FramePacer::request() {
  if (pending_) return;
  const double interval = std::max(double(min_interval_ms_), last_cost_ms_ / budget_);
  const double wait = since_draw_.isValid() ? interval - double(since_draw_.elapsed()) : 0.0;
  if (wait <= 0.0) {
    draw_now();
    return;
  }
  pending_ = true;
  QTimer::singleShot(int(std::ceil(wait)), owner_, [this] {
    pending_ = false;
    draw_now();
  });
}

namespace {
// The GUI thread's own CPU time in ms: what a draw takes from the engine's threads. Wall time
// would also count the time other processes held the core, and throttle the views hardest on
// a machine that is busy for other reasons.
double thread_cpu_ms() {
#ifdef CLOCK_THREAD_CPUTIME_ID
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) return 1e3 * double(ts.tv_sec) + 1e-6 * double(ts.tv_nsec);
#endif
  static QElapsedTimer wall;
  if (!wall.isValid()) wall.start();
  return double(wall.nsecsElapsed()) / 1e6;
}
}  // namespace

void FramePacer::draw_now() {
  // Intervals run from the start of one draw to the start of the next: a frame period, and
  // exactly the period in which a draw of this cost takes `budget` of the time.
  since_draw_.start();
  const double start = thread_cpu_ms();
  draw_();
  last_cost_ms_ = thread_cpu_ms() - start;
  total_cost_ms_ += last_cost_ms_;
}

}  // namespace llmwb::ui
