// llmwb/speculative_stats.h — what speculative decoding did, per request and per engine (vLLM's
// spec-decode metrics): draft tokens proposed and accepted, per draft position too.
#pragma once

#include <cstdint>
#include <vector>

namespace llmwb {

struct SpeculativeStats {
  uint64_t drafted = 0;    // draft tokens the target verified
  uint64_t accepted = 0;   // of those, accepted
  uint64_t drafts = 0;     // verification rounds with at least one draft token
  // Per draft position (0 = the first guess): verified and accepted there.
  std::vector<uint64_t> drafted_at, accepted_at;

  double acceptance_rate() const { return drafted ? double(accepted) / double(drafted) : 0.0; }
  // Tokens one verification round yields on average, the bonus token counted (vLLM's mean
  // acceptance length: 1 + accepted / drafts). 0 without drafts.
  double mean_acceptance_length() const { return drafts ? 1.0 + double(accepted) / double(drafts) : 0.0; }
  // Acceptance rate at draft position i (0 where nothing was drafted there).
  double acceptance_at(size_t i) const {
    return i < drafted_at.size() && drafted_at[i] ? double(accepted_at[i]) / double(drafted_at[i]) : 0.0;
  }
  // One round: `drafted` guesses of which the first `accepted` were kept.
  void add_round(int drafted_now, int accepted_now) {
    if (drafted_now <= 0) return;
    drafted += static_cast<uint64_t>(drafted_now);
    accepted += static_cast<uint64_t>(accepted_now);
    ++drafts;
    if (drafted_at.size() < static_cast<size_t>(drafted_now)) {
      drafted_at.resize(static_cast<size_t>(drafted_now), 0);
      accepted_at.resize(static_cast<size_t>(drafted_now), 0);
    }
    for (int i = 0; i < drafted_now; ++i) {
      ++drafted_at[static_cast<size_t>(i)];
      if (i < accepted_now) ++accepted_at[static_cast<size_t>(i)];
    }
  }
  void add(const SpeculativeStats& o) {
    drafted += o.drafted;
    accepted += o.accepted;
    drafts += o.drafts;
    if (drafted_at.size() < o.drafted_at.size()) {
      drafted_at.resize(o.drafted_at.size(), 0);
      accepted_at.resize(o.drafted_at.size(), 0);
    }
    for (size_t i = 0; i < o.drafted_at.size(); ++i) {
      drafted_at[i] += o.drafted_at[i];
      accepted_at[i] += o.accepted_at[i];
    }
  }
};

}  // namespace llmwb
