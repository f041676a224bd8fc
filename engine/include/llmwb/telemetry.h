// llmwb/telemetry.h — what the engine reports after every step, for charts, traces and tests.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "llmwb/speculative_stats.h"

namespace llmwb {

// One physical KV block.
struct BlockState {
  int64_t owner = -1;   // request id of the (first) owning sequence, -1 when free / cached only
  int ref_count = 0;    // sequences holding it
  int filled = 0;       // token slots written
  bool cached = false;  // full, hashed, reusable by the prefix cache
};

struct SequenceTelemetry {
  uint64_t request_id = 0;
  int sample_index = 0;
  int num_tokens = 0;         // prompt + generated so far
  int num_computed = 0;       // tokens whose K/V are in the cache
  int num_prompt_tokens = 0;
  std::vector<int> block_table;
  std::string state;          // "waiting", "running", "preempted", "paused" (Engine::pause)
};

// Attention weights captured for one sequence's newest query token(s).
struct AttentionSnapshot {
  uint64_t request_id = 0;
  int layer = 0;
  int n_heads = 0;
  int context_len = 0;                 // keys 0..context_len-1
  std::vector<int> query_positions;    // positions of the captured queries (most recent last)
  std::vector<int> context_tokens;     // token ids at key positions 0..context_len-1
  // weights[(q * n_heads + h) * context_len + k]; rows for shorter contexts are 0-padded.
  std::vector<float> weights;
};

// One interval of a rank's step, for the Parallelism view's lanes: what the rank was doing from
// `begin` to `end` seconds after the step started (in-process ranks: one origin for every rank
// of the step, the runner's start of it; MPI ranks: each rank's own start, when the step's
// command reached it, so lanes are offset by the broadcast's latency).
// Time in no span is idle (the bubble of a pipeline stage waiting for its input shows as a Recv
// span: waiting inside the receive).
struct RankSpan {
  enum class Kind : uint8_t { Compute, AllReduce, Send, Recv };
  Kind kind = Kind::Compute;
  float begin = 0, end = 0;   // seconds since the step started
  int micro_batch = 0;        // which micro-batch of the step (0 without micro-batches)
  uint64_t bytes = 0;         // payload of a communication span
};
// "compute", "allreduce", "send", "recv" (the --trace JSON's names).
inline const char* rank_span_kind_name(RankSpan::Kind k) {
  switch (k) {
    case RankSpan::Kind::Compute: return "compute";
    case RankSpan::Kind::AllReduce: return "allreduce";
    case RankSpan::Kind::Send: return "send";
    case RankSpan::Kind::Recv: return "recv";
  }
  return "?";
}

// One rank of a tensor / pipeline parallel runner in one step (docs/PARALLEL.md).
struct RankTelemetry {
  int tp_rank = 0, pp_stage = 0;
  int micro_batches = 1;          // the step's batch split into this many pipeline micro-batches
  std::vector<RankSpan> spans;    // in time order; empty where the runner does not record them
  double step_seconds = 0;        // the rank's whole step
  double compute_seconds = 0;     // step - all-reduce - recv - send
  double allreduce_seconds = 0;   // in the tensor-parallel all-reduces, waiting for the others included
  double recv_seconds = 0;        // waiting for the previous pipeline stage (its bubble and the transfer)
  uint64_t allreduce_bytes = 0;   // payload this rank all-reduced
  uint64_t sendrecv_bytes = 0;    // residual stream received from / sent to a neighbouring stage
  double send_seconds = 0;        // handing the residual stream on (waiting for the next stage to take it)
  // The pipeline bubble: of the step's wall time (wall_seconds: from the step's start to the
  // end of its slowest rank, the same for every rank of the step) the time this rank neither
  // computed nor all-reduced: waiting for its input, blocked handing on its output, idle before
  // its first micro-batch arrived or after its last left. bubble_fraction = bubble / wall.
  double wall_seconds = 0;
  double bubble_seconds = 0;
  double bubble_fraction = 0;
};

// One rank's RankTelemetry summed over steps (what `bench` reports per rank and the parallel
// runners keep since they were built).
struct RankTotals {
  int tp_rank = 0, pp_stage = 0;
  int64_t steps = 0, micro_batches = 0;
  double step_seconds = 0, compute_seconds = 0, allreduce_seconds = 0, recv_seconds = 0, send_seconds = 0;
  double wall_seconds = 0, bubble_seconds = 0;
  uint64_t allreduce_bytes = 0, sendrecv_bytes = 0;

  void add(const RankTelemetry& t) {
    tp_rank = t.tp_rank;
    pp_stage = t.pp_stage;
    ++steps;
    micro_batches += t.micro_batches;
    step_seconds += t.step_seconds;
    compute_seconds += t.compute_seconds;
    allreduce_seconds += t.allreduce_seconds;
    recv_seconds += t.recv_seconds;
    send_seconds += t.send_seconds;
    wall_seconds += t.wall_seconds;
    bubble_seconds += t.bubble_seconds;
    allreduce_bytes += t.allreduce_bytes;
    sendrecv_bytes += t.sendrecv_bytes;
  }
  double bubble_fraction() const { return wall_seconds > 0 ? bubble_seconds / wall_seconds : 0.0; }
};

// The costs an adaptive draft length weighs (spec/spec_cost.h): the target's pass as
// fixed_seconds + per_token_seconds for each token it scores, and one draft pass.
struct SpecCostEstimate {
  double fixed_seconds = 0.0, per_token_seconds = 0.0, draft_pass_seconds = 0.0;
};

struct StepTelemetry {
  uint64_t step = 0;
  double time = 0.0;             // seconds since the engine started, at the end of the step
  double step_seconds = 0.0;
  double schedule_seconds = 0.0, forward_seconds = 0.0, sample_seconds = 0.0;
  int num_prefill_tokens = 0;    // prompt tokens computed this step
  int num_decode_tokens = 0;     // generated tokens computed this step
  int num_prefill_seqs = 0, num_decode_seqs = 0;
  int num_running = 0, num_waiting = 0, num_preempted = 0;
  int num_paused = 0;   // sequences held by Engine::pause (counted in running / waiting too)
  uint64_t preemptions_total = 0;
  uint64_t prefix_cache_hit_tokens_total = 0;
  uint64_t prefix_cache_queried_tokens_total = 0;
  // KV cache
  int block_size = 0;
  int blocks_total = 0, blocks_used = 0, blocks_cached = 0, blocks_free = 0;
  uint64_t slots_allocated = 0;  // block_size * blocks held by live sequences
  uint64_t slots_filled = 0;     // of those, slots holding a token (fragmentation = 1 - filled/allocated)
  uint64_t kv_bytes_total = 0;
  std::string kv_dtype = "f32";  // element type of the pool ("f32", "f16", "int8"), which kv_bytes_total reflects
  std::vector<BlockState> blocks;           // per physical block
  std::vector<SequenceTelemetry> sequences; // live sequences
  std::shared_ptr<const AttentionSnapshot> attention;  // when capture is on
  // Speculative decoding ("" when off): this step's and all steps' counts, and the time the
  // proposer took this step (drafting; forward_seconds is the target's verification pass).
  std::string speculative_method;
  SpeculativeStats speculative_step, speculative_total;
  double draft_seconds = 0.0;
  // A model draft stops guessing below this probability next step (SpeculativeConfig::
  // draft_p_min; automatic: a draft pass's share of the target's decode bytes); 0 = never.
  double draft_p_min = 0.0;
  double draft_seconds_total = 0.0, verify_seconds_total = 0.0;   // over steps that speculated
  // What an adaptive draft length (--spec-k auto) weighs to switch off, learnt from the decode
  // steps (spec/spec_cost.h); empty until it is known.
  std::optional<SpecCostEstimate> spec_cost;
  std::vector<RankTelemetry> ranks;         // per rank of a parallel runner; empty for one rank
};

}  // namespace llmwb
