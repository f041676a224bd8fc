// scheduler.cpp — continuous batching (Orca, Yu et al., OSDI 2022: iteration-level
// scheduling) with vLLM's chunked prefill, recompute preemption and prefix-cache admission.
//
// One step, within a budget of max_num_batched_tokens:
//  1. Running sequences, earliest arrival first, each get min(uncomputed, budget left) tokens
//     (1 for a decode, the next chunk for a prompt still in prefill). When the block manager
//     cannot give them slots, the latest-arrived running sequence is preempted (its blocks
//     are released and it waits again at the front of the queue, to be recomputed), which is
//     the sequence itself when it is the latest: the oldest requests always make progress.
//  2. Only if nothing was preempted (memory is tight, admitting more would thrash), waiting
//     sequences are admitted strictly first come, first served: a prompt's cached prefix is
//     taken from the prefix cache and only the rest is scheduled. The head of the queue
//     never gets skipped, so no request starves behind later, smaller ones.
// running_ is kept ordered by (arrival, seq_id) so that running_.back() is the victim.
#include "sched/scheduler.h"

#include <algorithm>
#include <string>

#include "llmwb/errors.h"

namespace llmwb {

namespace {

bool arrives_before(const Sequence* a, const Sequence* b) {
  return a->arrival != b->arrival ? a->arrival < b->arrival : a->seq_id < b->seq_id;
}

std::string request_name(const Sequence& seq) {
  return "request " + std::to_string(seq.request_id);
}

// Schedules num_new tokens of seq and counts them as decode or prefill tokens.
void add_scheduled(Sequence* seq, int num_new, bool admitted, SchedulerOutput& out) {
  const bool decode = is_decode(*seq, num_new);
  (decode ? out.num_decode_tokens : out.num_prefill_tokens) += num_new;
  out.scheduled.push_back(ScheduledSeq{seq, num_new, decode, admitted});
}

}  // namespace

bool is_decode(const Sequence& seq, int num_new_tokens) {
  return num_new_tokens == 1 && seq.num_computed_tokens == seq.num_tokens() - 1 &&
         seq.num_tokens() > seq.num_prompt_tokens;
}

Scheduler::Scheduler(const SchedulerConfig& config, BlockManager& blocks)
    : config_(config), blocks_(blocks) {
  if (config_.max_num_seqs < 1) {
    throw Error("max_num_seqs", "must be at least 1, got " + std::to_string(config_.max_num_seqs));
  }
  if (config_.max_num_batched_tokens < 1) {
    throw Error("max_num_batched_tokens",
                "must be at least 1, got " + std::to_string(config_.max_num_batched_tokens));
  }
}

void Scheduler::add(Sequence* seq) {
  seq->status = SeqStatus::Waiting;
  // Normally seq is the latest arrival and goes to the back; a sequence added out of order
  // still takes its FCFS place.
  auto pos = waiting_.end();
  while (pos != waiting_.begin() && arrives_before(seq, *(pos - 1))) --pos;
  waiting_.insert(pos, seq);
}

void Scheduler::add_forked(Sequence* child) {
  child->status = SeqStatus::Running;
  running_.insert(std::upper_bound(running_.begin(), running_.end(), child, arrives_before), child);
}

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput out;
  int budget = config_.max_num_batched_tokens;

  auto preempt_latest = [&]() {
    Sequence* victim = running_.back();
    running_.pop_back();
    blocks_.release(*victim);
    victim->num_computed_tokens = 0;
    victim->num_cached_tokens = 0;
    victim->status = SeqStatus::Preempted;
    waiting_.push_front(victim);
    ++preemptions_;
    out.preempted.push_back(victim);
    return victim;
  };

  // 1. Running sequences. A victim is always later than `seq` (or is seq), so no sequence
  //    scheduled earlier in this loop is ever preempted. Forked samples join the running set
  //    directly and may push it past max_num_seqs for a while; the latest of them then sit
  //    out a step instead of breaking the batch limit.
  const size_t max_seqs = static_cast<size_t>(config_.max_num_seqs);
  for (size_t i = 0; i < running_.size() && budget > 0 && out.scheduled.size() < max_seqs;) {
    Sequence* seq = running_[i];
    const int uncomputed = seq->num_uncomputed();
    if (uncomputed <= 0 || seq->paused || (!config_.chunked_prefill && uncomputed > budget)) {
      ++i;
      continue;
    }
    const int num_new = std::min(uncomputed, budget);
    // Draft slots only for a decode, only within the budget and only from free blocks.
    int spec = seq->num_spec_tokens;
    if (spec > 0 && (uncomputed != 1 || budget < 1 + spec || !blocks_.can_append(*seq, 1 + spec))) spec = 0;
    bool self_preempted = false;
    while (!blocks_.append_slots(*seq, num_new + spec, &out.copies)) {
      if (preempt_latest() == seq) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted) break;  // seq was the last running sequence
    add_scheduled(seq, num_new, false, out);
    out.scheduled.back().num_spec_slots = spec;
    out.num_decode_tokens += spec;
    budget -= num_new + spec;
    ++i;
  }

  // 2. Admission, first come first served.
  if (!out.preempted.empty()) return out;
  // A paused sequence waits without holding up the ones behind it.
  size_t head = 0;
  while (head < waiting_.size() && waiting_[head]->paused) ++head;
  while (head < waiting_.size() && budget > 0 &&
         static_cast<int>(running_.size()) < config_.max_num_seqs) {
    Sequence* seq = waiting_[head];
    const bool fresh = seq->block_table.empty();
    const int start = fresh ? blocks_.count_cached_prefix(*seq) : seq->num_computed_tokens;
    const int uncomputed = seq->num_tokens() - start;
    if (!config_.chunked_prefill && uncomputed > budget) {
      if (running_.empty()) {
        throw Error(request_name(*seq), std::to_string(uncomputed) +
                                            " tokens to prefill in one step, but "
                                            "max_num_batched_tokens is " +
                                            std::to_string(config_.max_num_batched_tokens) +
                                            " and chunked prefill is off");
      }
      break;
    }
    const int num_new = std::min(uncomputed, budget);
    bool admitted = blocks_.can_append(*seq, num_new);
    if (admitted) {
      if (fresh) blocks_.acquire_prefix(*seq);
      admitted = blocks_.append_slots(*seq, num_new, &out.copies);
      if (!admitted && fresh) {  // not expected after can_append; undo the prefix
        blocks_.release(*seq);
        seq->num_computed_tokens = 0;
        seq->num_cached_tokens = 0;
      }
    }
    if (!admitted) {
      if (running_.empty()) {
        // Nothing holds a block, yet this sequence does not fit: it never will. The Engine
        // rejects such requests at add time; report rather than spin forever.
        throw Error(request_name(*seq), "needs more KV blocks than the pool holds (" +
                                            std::to_string(blocks_.num_blocks()) + " blocks of " +
                                            std::to_string(blocks_.block_size()) + " tokens)");
      }
      break;  // FCFS: later sequences do not overtake the head
    }
    waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(head));
    while (head < waiting_.size() && waiting_[head]->paused) ++head;
    seq->status = SeqStatus::Running;
    running_.insert(std::upper_bound(running_.begin(), running_.end(), seq, arrives_before), seq);
    add_scheduled(seq, num_new, true, out);
    budget -= num_new;
  }
  return out;
}

void Scheduler::remove(Sequence* seq) {
  auto w = std::find(waiting_.begin(), waiting_.end(), seq);
  if (w != waiting_.end()) waiting_.erase(w);
  auto r = std::find(running_.begin(), running_.end(), seq);
  if (r != running_.end()) running_.erase(r);
  blocks_.release(*seq);
  seq->status = SeqStatus::Finished;
}

bool Scheduler::has_work() const { return !waiting_.empty() || !running_.empty(); }
int Scheduler::num_waiting() const { return static_cast<int>(waiting_.size()); }
int Scheduler::num_running() const { return static_cast<int>(running_.size()); }
uint64_t Scheduler::preemptions_total() const { return preemptions_; }
const std::deque<Sequence*>& Scheduler::waiting() const { return waiting_; }
const std::vector<Sequence*>& Scheduler::running() const { return running_; }

}  // namespace llmwb
