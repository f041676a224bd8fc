#include "telemetry_frame.h"

namespace llmwb::ui {

StepRecord StepRecord::from(const StepTelemetry& t) {
  StepRecord r;
  r.step = t.step;
  r.time = t.time;
  r.step_seconds = t.step_seconds;
  r.schedule_seconds = t.schedule_seconds;
  r.forward_seconds = t.forward_seconds;
  r.sample_seconds = t.sample_seconds;
  r.draft_seconds = t.draft_seconds;
  r.spec_drafted = int(t.speculative_step.drafted);
  r.spec_accepted = int(t.speculative_step.accepted);
  r.spec_drafts = int(t.speculative_step.drafts);
  r.num_prefill_tokens = t.num_prefill_tokens;
  r.num_decode_tokens = t.num_decode_tokens;
  r.num_prefill_seqs = t.num_prefill_seqs;
  r.num_decode_seqs = t.num_decode_seqs;
  r.num_running = t.num_running;
  r.num_waiting = t.num_waiting;
  r.num_paused = t.num_paused;
  r.blocks_used = t.blocks_used;
  r.blocks_cached = t.blocks_cached;
  r.blocks_total = t.blocks_total;
  if (!t.ranks.empty()) r.ranks = std::make_shared<const std::vector<RankTelemetry>>(t.ranks);
  return r;
}

}  // namespace llmwb::ui
