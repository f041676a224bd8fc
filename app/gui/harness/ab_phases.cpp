#include "ab_phases.h"

#include "llmwb/stats.h"

#include <algorithm>
#include <map>

namespace llmwb::gui {

namespace {

// One phase's steps: raw totals, and the time the quiet reference predicts for them
// (expected) against the time they took (actual), over the steps whose bucket has a reference.
struct PhaseSum {
  long steps = 0, tokens = 0;
  double seconds = 0.0;
  double expected = 0.0, actual = 0.0;
  bool usable() const { return tokens > 0 && seconds > 0.0 && actual > 0.0; }
};

int bucket(const StepSample& s) { return s.context / AbResult::kContextBucket; }

}  // namespace

AbResult analyse_ab(const std::vector<StepSample>& samples, const std::vector<AbPhase>& phases) {
  AbResult r;
  const int n = int(phases.size());
  std::vector<const StepSample*> kept;
  kept.reserve(samples.size());
  for (const StepSample& s : samples) {
    if (s.phase < 0 || s.phase >= n) continue;
    if (s.start < phases[size_t(s.phase)].settled) {
      ++r.settle_steps;
      continue;
    }
    kept.push_back(&s);
  }

  // The quiet phases' seconds per token by context bucket.
  std::map<int, std::pair<double, long>> quiet_by_bucket;  // seconds, tokens
  for (const StepSample* s : kept) {
    if (phases[size_t(s->phase)].live || s->tokens <= 0) continue;
    auto& [seconds, tokens] = quiet_by_bucket[bucket(*s)];
    seconds += s->seconds;
    tokens += s->tokens;
  }

  std::vector<PhaseSum> sums(static_cast<size_t>(n));
  for (const StepSample* s : kept) {
    PhaseSum& p = sums[size_t(s->phase)];
    ++p.steps;
    p.tokens += s->tokens;
    p.seconds += s->seconds;
    auto ref = quiet_by_bucket.find(bucket(*s));
    if (s->tokens > 0 && ref != quiet_by_bucket.end()) {
      p.expected += double(s->tokens) * ref->second.first / double(ref->second.second);
      p.actual += s->seconds;
    }
  }

  PhaseSum live_total, quiet_total;
  for (int k = 0; k < n; ++k) {
    const AbPhase& ph = phases[size_t(k)];
    const PhaseSum& p = sums[size_t(k)];
    AbSide& side = ph.live ? r.live : r.quiet;
    PhaseSum& total = ph.live ? live_total : quiet_total;
    ++side.phases;
    side.steps += p.steps;
    side.tokens += p.tokens;
    side.step_seconds += p.seconds;
    side.wall_seconds += std::max(0.0, ph.end - ph.settled);
    side.draws += ph.draws;
    side.settle_draws += ph.settle_draws;
    side.draw_ms += ph.draw_ms;
    side.gui_cpu_s += ph.gui_cpu_s;
    total.expected += p.expected;
    total.actual += p.actual;
  }

  for (int k = 0; k + 1 < n; k += 2) {
    const PhaseSum& l = sums[size_t(k)];
    const PhaseSum& q = sums[size_t(k + 1)];
    if (!phases[size_t(k)].live || phases[size_t(k + 1)].live || !l.usable() || !q.usable()) continue;
    ++r.pairs;
    // Rates relative to the quiet reference: expected / actual.
    r.pair_overhead.push_back(1.0 - (l.expected / l.actual) / (q.expected / q.actual));
    r.pair_overhead_raw.push_back(1.0 - (double(l.tokens) / l.seconds) / (double(q.tokens) / q.seconds));
  }
  r.overhead_median = median(r.pair_overhead);
  r.overhead_raw_median = median(r.pair_overhead_raw);
  if (live_total.actual > 0 && quiet_total.actual > 0 && quiet_total.expected > 0)
    r.overhead_pooled =
        1.0 - (live_total.expected / live_total.actual) / (quiet_total.expected / quiet_total.actual);
  if (r.live.tok_s() > 0 && r.quiet.tok_s() > 0) r.overhead_raw_pooled = 1.0 - r.live.tok_s() / r.quiet.tok_s();
  return r;
}

}  // namespace llmwb::gui
