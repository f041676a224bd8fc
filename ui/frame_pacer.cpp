#include "frame_pacer.h"

#include <QTimer>

#include <algorithm>
#include <cmath>

namespace llmwb::ui {

FramePacer::FramePacer(QObject* owner, std::function<void()> draw, double budget, int min_interval_ms)
    : owner_(owner), draw_(std::move(draw)), budget_(budget), min_interval_ms_(min_interval_ms) {}

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

void FramePacer::draw_now() {
  QElapsedTimer t;
  t.start();
  draw_();
  ++draws_;
  last_cost_ms_ = double(t.nsecsElapsed()) / 1e6;
  since_draw_.start();
}

}  // namespace llmwb::ui
