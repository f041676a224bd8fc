// step_observer.h — what a measurement harness may attach to the engine thread's step loop
// (app/gui/harness: the GUI benchmark's A/B mode). None is attached in the product, and then
// the loop pays one null check per step.
#pragma once

namespace llmwb::gui {

class StepObserver {
 public:
  virtual ~StepObserver() = default;
  // Engine thread: a step begins / has ended, having generated `tokens` tokens (all requests),
  // the longest sequence now `context` tokens long.
  virtual void step_started() = 0;
  virtual void step_finished(int tokens, int context) = 0;
};

}  // namespace llmwb::gui
