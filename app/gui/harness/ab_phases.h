// ab_phases.h — the arithmetic of the GUI benchmark's A/B mode (--bench-ab, bench_mode.h).
//
// The running GUI alternates between "live" phases (results delivered, text streamed, charts
// drawn) and "quiet" ones (the mailbox held: the GUI thread idle, as in a headless run) while
// the engine generates without a pause. Every engine step carries the phase current when it
// started (StepLog). Steps that start within the settle time after a switch are left out:
// they may still compete with a draw scheduled before the switch, or with the backlog a
// release delivers. Adjacent phases (live 2i, quiet 2i+1) form a pair a fraction of a second
// long, over which the machine's own drift (other processes, frequency) is small; the
// overhead is the median over pairs of 1 - live rate / quiet rate.
//
// A step's cost grows with the context it attends over, and with short generations a phase
// can hold mostly early or mostly late positions (a quiet phase ends at a finish, and with
// generations shorter than a phase it begins at a generation's start). Besides the raw rates the overhead is therefore
// also given position-matched: every step is compared with the quiet phases' mean time per
// token at its context length (buckets of kContextBucket tokens), so both phases are rated at
// the same mix of positions. For long generations (a phase covers a few tokens of context)
// the two agree.
#pragma once

#include <vector>

#include "step_log.h"

namespace llmwb::gui {

struct AbPhase {
  bool live = false;
  double start = 0.0, settled = 0.0, end = 0.0;  // StepLog::now() seconds
  // The GUI thread over [settled, end): draws of the raised view, their cost (GUI thread CPU
  // ms), the GUI thread's CPU seconds; and the draws in the settle time [start, settled).
  long draws = 0;
  double draw_ms = 0.0;
  double gui_cpu_s = 0.0;
  long settle_draws = 0;
};

struct AbSide {
  int phases = 0;
  long steps = 0, tokens = 0;
  double step_seconds = 0.0;  // summed engine step time
  double wall_seconds = 0.0;  // summed phase time after settling
  long draws = 0, settle_draws = 0;
  double draw_ms = 0.0, gui_cpu_s = 0.0;
  double tok_s() const { return step_seconds > 0 ? double(tokens) / step_seconds : 0.0; }
};

struct AbResult {
  static constexpr int kContextBucket = 32;
  AbSide live, quiet;
  int pairs = 0;                         // adjacent pairs with steps in both phases
  std::vector<double> pair_overhead;     // position-matched, one per pair
  std::vector<double> pair_overhead_raw;
  double overhead_median = 0.0, overhead_pooled = 0.0;  // position-matched
  double overhead_raw_median = 0.0, overhead_raw_pooled = 0.0;
  long settle_steps = 0;  // left out: started within the settle time
};

// `phases` in order, phase k being the tag k in the samples (live first, alternating).
// Samples of other tags (before the measurement) are ignored.
AbResult analyse_ab(const std::vector<StepSample>& samples, const std::vector<AbPhase>& phases);

}  // namespace llmwb::gui
