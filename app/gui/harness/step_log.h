// step_log.h — what each engine step took, recorded by the engine thread for the GUI
// benchmark's A/B mode (bench_mode.h, --bench-ab).
//
// Comparing separate headless and GUI processes on a shared machine measures the machine's
// drift as much as the GUI. The A/B mode instead flips the running GUI between drawing
// ("live") and idle ("quiet") every few hundred milliseconds and compares the engine's own
// steps in adjacent phases. For that the engine thread stamps every step with its start,
// duration, tokens and the phase current when it started. It is the worker's StepObserver only
// while the A/B mode runs and then costs a step two clock reads, a relaxed atomic load and a
// store into memory reserved up front: no lock and no allocation on the engine's hot path.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <vector>

#include "step_observer.h"

namespace llmwb::gui {

struct StepSample {
  double start = 0.0;    // steady_clock seconds (the clock of StepLog::now)
  double seconds = 0.0;  // the step and the packing of its results (not the post itself)
  int tokens = 0;        // tokens the step generated (all requests)
  int context = 0;       // the longest sequence after the step (prompt + output tokens)
  int phase = -1;        // StepLog::phase() when the step started
};

class StepLog final : public StepObserver {
 public:
  static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }

  // Only while the engine runs no generation (the GUI thread, between generations): clears
  // the log and reserves `capacity` samples; 0 turns recording off. Samples beyond the
  // capacity are counted, not stored, so the engine thread never allocates.
  void enable(std::size_t capacity) {
    samples_.clear();
    samples_.shrink_to_fit();
    samples_.reserve(capacity);
    overflow_ = 0;
    on_.store(capacity > 0, std::memory_order_relaxed);
  }
  bool enabled() const { return on_.load(std::memory_order_relaxed); }

  // Any thread: the tag of the steps that start from now on.
  void set_phase(int phase) { phase_.store(phase, std::memory_order_relaxed); }
  int phase() const { return phase_.load(std::memory_order_relaxed); }

  // Engine thread (as the worker's StepObserver).
  void step_started() override {
    current_ = StepSample{};
    current_.phase = phase();
    current_.start = now();
  }
  void step_finished(int tokens, int context) override {
    current_.tokens = tokens;
    current_.context = context;
    current_.seconds = now() - current_.start;
    record(current_);
  }
  void record(const StepSample& s) {
    if (samples_.size() < samples_.capacity()) samples_.push_back(s);
    else ++overflow_;
  }

  // Read once the generations have finished (their finish, posted after the last record,
  // reached the reader through the mailbox's lock).
  const std::vector<StepSample>& samples() const { return samples_; }
  long overflow() const { return overflow_; }

 private:
  std::atomic<bool> on_{false};
  std::atomic<int> phase_{-1};
  std::vector<StepSample> samples_;
  long overflow_ = 0;
  StepSample current_;   // the step under way (engine thread)
};

}  // namespace llmwb::gui
