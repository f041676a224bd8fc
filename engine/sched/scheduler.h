// scheduler.h — iteration-level (continuous) batching with chunked prefill, as in vLLM.
//
// Every step: each running sequence gets its next token(s) scheduled (a decode is 1 token; a
// sequence still in prefill gets its next prompt chunk), then waiting sequences are admitted
// first come, first served while the step's token budget (max_num_batched_tokens), the
// sequence limit (max_num_seqs) and free KV blocks allow. A long prompt is split into chunks
// across steps so running decodes never stall behind it. When blocks run out, the most
// recently arrived running sequence is preempted: its blocks are released and it goes back to
// the front of the waiting queue to be recomputed later. The scheduler never touches tensors.
//
// Speculative decoding: a decoding sequence that asks for k draft slots (num_spec_tokens) gets
// slots for its token and k more when the budget and free blocks allow, without preempting
// anyone for them; otherwise it decodes one token as usual.
#pragma once

#include <deque>
#include <vector>

#include "kv/block_manager.h"
#include "request/sequence.h"

namespace llmwb {

struct SchedulerConfig {
  int max_num_seqs = 64;
  int max_num_batched_tokens = 512;
  bool chunked_prefill = true;
};

struct ScheduledSeq {
  Sequence* seq = nullptr;
  int num_new_tokens = 0;   // tokens to compute this step, starting at seq->num_computed_tokens
  bool decode = false;      // is_decode(*seq, num_new_tokens), decided here once for everyone
  bool admitted = false;    // admitted from the waiting queue by this step (its prefix-cache hits
                            // are in seq->num_cached_tokens)
  // Speculative decoding: KV slots reserved past the num_new_tokens for draft tokens (the
  // sequence's num_spec_tokens when the step's budget and the free blocks allow them, else 0).
  int num_spec_slots = 0;
};

// The one rule for what a decode is: exactly the one token sampled last step. Everything else
// (prompt chunks, and prompt + generated tokens recomputed after a preemption, even a chunk of
// one token) is prefill.
bool is_decode(const Sequence& seq, int num_new_tokens);

struct SchedulerOutput {
  std::vector<ScheduledSeq> scheduled;   // running sequences first, then newly admitted ones
  std::vector<BlockCopy> copies;         // copy-on-write block copies to do before the forward
  std::vector<Sequence*> preempted;      // sequences preempted in this step
  int num_prefill_tokens = 0;
  int num_decode_tokens = 0;
  bool empty() const { return scheduled.empty(); }
};

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& config, BlockManager& blocks);

  void add(Sequence* seq);          // enters the waiting queue (FCFS by seq->arrival)
  // Parallel sampling: a child forked (BlockManager::fork) from a running parent joins the
  // running set directly.
  void add_forked(Sequence* child);
  SchedulerOutput schedule();
  // Removes a sequence (finished or aborted) from whichever queue holds it and releases its
  // blocks. Safe to call for a sequence in any state.
  void remove(Sequence* seq);

  bool has_work() const;
  int num_waiting() const;
  int num_running() const;
  uint64_t preemptions_total() const;
  const std::deque<Sequence*>& waiting() const;
  const std::vector<Sequence*>& running() const;

 private:
  SchedulerConfig config_;
  BlockManager& blocks_;
  std::deque<Sequence*> waiting_;
  std::vector<Sequence*> running_;
  uint64_t preemptions_ = 0;
};

}  // namespace llmwb
