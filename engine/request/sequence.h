// sequence.h — one token stream being generated: its tokens, how many of them have K/V in
// the cache, and its block table. The Scheduler and BlockManager move sequences between
// states; the Engine owns them and samples their tokens.
#pragma once

#include <cstdint>
#include <vector>

namespace llmwb {

enum class SeqStatus { Waiting, Running, Preempted, Finished };

struct Sequence {
  uint64_t seq_id = 0;          // unique per sequence
  uint64_t request_id = 0;      // the request it belongs to (n samples share one)
  int sample_index = 0;
  uint64_t arrival = 0;         // admission order: lower arrived earlier (FCFS, preemption victim)
  std::vector<int> tokens;      // prompt followed by generated tokens
  int num_prompt_tokens = 0;
  int max_total_tokens = 0;     // prompt + max_tokens, capped by the context length
  int num_computed_tokens = 0;  // tokens whose K/V are in the cache (prefix hits included)
  int num_cached_tokens = 0;    // of the prompt, how many came from the prefix cache
  SeqStatus status = SeqStatus::Waiting;
  std::vector<int> block_table; // logical block i -> physical block id
  // Speculative decoding: draft slots the engine asks the scheduler to reserve past the next
  // token (k), and the draft tokens proposed into them this step (at most k; never in `tokens`
  // until the target accepts them, so no other part sees an unverified token).
  int num_spec_tokens = 0;
  std::vector<int> spec_tokens;
  bool paused = false;          // held by the engine: not scheduled, blocks kept

  int num_tokens() const { return static_cast<int>(tokens.size()); }
  int num_uncomputed() const { return num_tokens() - num_computed_tokens; }
  bool in_prefill() const { return num_computed_tokens < num_prompt_tokens; }
};

}  // namespace llmwb
