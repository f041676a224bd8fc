// telemetry_frame.h — the engine's telemetry as the GUI receives it, at most ~30 times a second.
//
// A frame carries a compact record of every step since the previous frame (enough for the
// throughput chart and the timeline, which must not lose steps) and the full snapshot of the
// newest step only (blocks, sequences, attention), which the views draw as "now".
#pragma once

#include <QMetaType>

#include <memory>
#include <vector>

#include "llmwb/telemetry.h"

namespace llmwb::ui {

struct StepRecord {
  quint64 step = 0;
  double time = 0.0;  // end of the step, seconds since the engine started
  double step_seconds = 0.0;
  double schedule_seconds = 0.0, forward_seconds = 0.0, sample_seconds = 0.0;
  // Speculative decoding: the proposer's time before the forward pass (which then verifies),
  // and the step's guesses.
  double draft_seconds = 0.0;
  int spec_drafted = 0, spec_accepted = 0, spec_drafts = 0;
  int num_prefill_tokens = 0, num_decode_tokens = 0;
  int num_prefill_seqs = 0, num_decode_seqs = 0;
  int num_running = 0, num_waiting = 0;
  int num_paused = 0;
  int blocks_used = 0, blocks_cached = 0, blocks_total = 0;
  // Each rank of a tensor / pipeline parallel runner (its spans included), shared so that
  // copying the record stays cheap; null for one rank.
  std::shared_ptr<const std::vector<RankTelemetry>> ranks;

  static StepRecord from(const StepTelemetry& t);
};

struct TelemetryFrame {
  std::vector<StepRecord> steps;                  // oldest first
  std::shared_ptr<const StepTelemetry> latest;    // the newest step in full
};

}  // namespace llmwb::ui

Q_DECLARE_METATYPE(llmwb::ui::TelemetryFrame)
