// Tests of the continuous-batching scheduler against a model-free engine loop: FCFS
// admission, chunked prefill beside running decodes, recompute preemption of the latest
// arrival, prefix-cache admission, limits, and removal in every state.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "kv/block_manager.h"
#include "llmwb/errors.h"
#include "sched/scheduler.h"
#include "request/sequence.h"

namespace llmwb {
namespace {

// Plays the Engine's part: after each schedule() it advances num_computed_tokens, commits,
// "samples" a token for fully computed sequences and removes those that reached their length.
struct Harness {
  BlockManager blocks;
  Scheduler sched;
  std::vector<std::unique_ptr<Sequence>> seqs;
  uint64_t next_id = 1;

  Harness(int num_blocks, int block_size, SchedulerConfig config, bool prefix_caching = false)
      : blocks(num_blocks, block_size, prefix_caching), sched(config, blocks) {}

  Sequence* add(std::vector<int> prompt, int max_new_tokens) {
    auto s = std::make_unique<Sequence>();
    s->seq_id = s->request_id = s->arrival = next_id++;
    s->num_prompt_tokens = static_cast<int>(prompt.size());
    s->max_total_tokens = s->num_prompt_tokens + max_new_tokens;
    s->tokens = std::move(prompt);
    seqs.push_back(std::move(s));
    sched.add(seqs.back().get());
    return seqs.back().get();
  }
  Sequence* add(int prompt_len, int max_new_tokens, int first_token = 0) {
    std::vector<int> p(static_cast<size_t>(prompt_len));
    for (int i = 0; i < prompt_len; ++i) p[static_cast<size_t>(i)] = first_token + i;
    return add(std::move(p), max_new_tokens);
  }

  std::vector<const Sequence*> live() const {
    std::vector<const Sequence*> v;
    for (const auto& s : seqs) {
      if (s->status != SeqStatus::Finished) v.push_back(s.get());
    }
    return v;
  }

  SchedulerOutput step() {
    SchedulerOutput out = sched.schedule();
    for (const ScheduledSeq& s : out.scheduled) {
      Sequence& seq = *s.seq;
      seq.num_computed_tokens += s.num_new_tokens;
      blocks.commit_computed(seq);
      if (seq.num_computed_tokens == seq.num_tokens()) {
        seq.tokens.push_back(10000 + seq.num_tokens());
        if (seq.num_tokens() >= seq.max_total_tokens) sched.remove(&seq);
      }
    }
    EXPECT_EQ(blocks.check_invariants(live()), "");
    return out;
  }
};

int scheduled_tokens(const SchedulerOutput& out, const Sequence* seq) {
  for (const ScheduledSeq& s : out.scheduled) {
    if (s.seq == seq) return s.num_new_tokens;
  }
  return 0;
}

SchedulerConfig config(int max_seqs, int budget, bool chunked = true) {
  SchedulerConfig c;
  c.max_num_seqs = max_seqs;
  c.max_num_batched_tokens = budget;
  c.chunked_prefill = chunked;
  return c;
}

TEST(Scheduler, RejectsConfigsWithoutRoomForWork) {
  BlockManager bm(4, 4, false);
  EXPECT_THROW(Scheduler(config(0, 16), bm), Error);
  EXPECT_THROW(Scheduler(config(4, 0), bm), Error);
}

TEST(Scheduler, AdmitsInArrivalOrderAndNeverSkipsTheHeadOfTheQueue) {
  Harness h(8, 16, config(8, 1024));
  Sequence* a = h.add(100, 4);  // 7 blocks
  Sequence* b = h.add(40, 4);   // 3 blocks: does not fit beside a
  Sequence* c = h.add(5, 4);    // 1 block: would fit, but must not overtake b
  SchedulerOutput out = h.step();
  ASSERT_EQ(out.scheduled.size(), 1u);
  EXPECT_EQ(out.scheduled[0].seq, a);
  EXPECT_EQ(out.scheduled[0].num_new_tokens, 100);
  EXPECT_EQ(h.sched.waiting(), (std::deque<Sequence*>{b, c}));
  EXPECT_EQ(b->status, SeqStatus::Waiting);
  EXPECT_EQ(c->status, SeqStatus::Waiting);
  while (a->status != SeqStatus::Finished) {
    out = h.step();
    EXPECT_EQ(scheduled_tokens(out, c), 0) << "c admitted before b";
  }
  out = h.step();
  ASSERT_EQ(out.scheduled.size(), 2u);
  EXPECT_EQ(out.scheduled[0].seq, b);
  EXPECT_EQ(out.scheduled[1].seq, c);
}

TEST(Scheduler, ChunkedPrefillSplitsA1000TokenPromptIntoFourStepsWhileADecodeContinues) {
  Harness h(128, 16, config(8, 256));
  Sequence* d = h.add(10, 100);
  h.step();  // d's prefill; it now decodes
  ASSERT_EQ(d->num_tokens(), 11);
  Sequence* p = h.add(1000, 5);
  int steps = 0;
  while (p->num_computed_tokens < 1000) {
    const SchedulerOutput out = h.step();
    ++steps;
    ASSERT_EQ(out.scheduled.size(), 2u);
    EXPECT_EQ(out.scheduled[0].seq, d) << "running sequences come first";
    EXPECT_EQ(out.scheduled[0].num_new_tokens, 1);
    EXPECT_EQ(out.num_decode_tokens, 1);
    EXPECT_EQ(out.num_prefill_tokens, out.scheduled[1].num_new_tokens);
    EXPECT_LE(out.num_decode_tokens + out.num_prefill_tokens, 256);
    EXPECT_EQ(out.scheduled[1].num_new_tokens, std::min(255, 1000 - 255 * (steps - 1)));
    ASSERT_LE(steps, 4);
  }
  EXPECT_EQ(steps, 4);
  EXPECT_EQ(d->num_tokens(), 15) << "one decode token per step";
  EXPECT_EQ(p->num_tokens(), 1001) << "sampled once its prompt was complete";
  const SchedulerOutput out = h.step();
  EXPECT_EQ(out.num_decode_tokens, 2);
  EXPECT_EQ(out.num_prefill_tokens, 0);
}

TEST(Scheduler, WithoutChunkedPrefillAPromptIsScheduledWholeOrWaits) {
  Harness h(128, 16, config(8, 256, /*chunked=*/false));
  Sequence* d = h.add(10, 3);
  h.step();
  Sequence* fits = h.add(200, 2);
  SchedulerOutput out = h.step();
  EXPECT_EQ(scheduled_tokens(out, fits), 200);
  Sequence* too_long = h.add(300, 2);
  out = h.step();
  EXPECT_EQ(scheduled_tokens(out, too_long), 0);
  EXPECT_EQ(too_long->status, SeqStatus::Waiting);
  while (d->status != SeqStatus::Finished || fits->status != SeqStatus::Finished) h.step();
  // Nothing else runs and it can never fit the budget: reported, not spun on.
  EXPECT_THROW(h.sched.schedule(), Error);
  h.sched.remove(too_long);
  EXPECT_FALSE(h.sched.has_work());
}

TEST(Scheduler, PreemptsTheMostRecentlyArrivedSequenceWhenBlocksRunOut) {
  Harness h(6, 4, config(8, 64));
  Sequence* a = h.add(7, 3);
  Sequence* b = h.add(7, 3);
  Sequence* c = h.add(7, 10);
  SchedulerOutput out = h.step();  // 2 blocks each: the pool is full
  ASSERT_EQ(out.scheduled.size(), 3u);
  out = h.step();  // position 7 still fits in each second block
  EXPECT_TRUE(out.preempted.empty());
  EXPECT_EQ(h.blocks.num_available_blocks(), 0);
  out = h.step();  // position 8 needs a third block for everyone
  ASSERT_EQ(out.preempted, std::vector<Sequence*>{c});
  EXPECT_EQ(c->status, SeqStatus::Preempted);
  EXPECT_EQ(c->num_computed_tokens, 0);
  EXPECT_TRUE(c->block_table.empty());
  EXPECT_EQ(c->num_tokens(), 9) << "generated tokens are kept for recomputation";
  EXPECT_EQ(h.sched.waiting().front(), c);
  ASSERT_EQ(out.scheduled.size(), 2u);
  EXPECT_EQ(out.scheduled[0].seq, a);
  EXPECT_EQ(out.scheduled[1].seq, b);
  EXPECT_EQ(h.sched.preemptions_total(), 1u);

  // c comes back when a and b are done and recomputes all 9 tokens as prefill.
  while (a->status != SeqStatus::Finished || b->status != SeqStatus::Finished) {
    out = h.step();
    EXPECT_EQ(scheduled_tokens(out, c), 0);
  }
  out = h.step();
  EXPECT_EQ(scheduled_tokens(out, c), 9);
  EXPECT_EQ(out.num_prefill_tokens, 9);
  EXPECT_EQ(c->status, SeqStatus::Running);
  while (c->status != SeqStatus::Finished) h.step();
  EXPECT_EQ(c->num_tokens(), 17);
}

TEST(Scheduler, TheLatestSequencePreemptsItselfAndNothingIsAdmittedThatStep) {
  Harness h(4, 4, config(8, 64));
  Sequence* a = h.add(6, 10);  // 2 blocks, room to grow to 8
  Sequence* b = h.add(8, 10);  // 2 blocks, full after its prompt
  h.step();
  Sequence* late = h.add(1, 1);
  const SchedulerOutput out = h.step();  // b needs a block: b is the latest running
  EXPECT_EQ(out.preempted, std::vector<Sequence*>{b});
  ASSERT_EQ(out.scheduled.size(), 1u);
  EXPECT_EQ(out.scheduled[0].seq, a);
  EXPECT_EQ(scheduled_tokens(out, late), 0) << "no admission in a step that preempted";
  EXPECT_EQ(h.sched.waiting(), (std::deque<Sequence*>{b, late}));
}

TEST(Scheduler, ALoneSequenceThatOutgrowsThePoolIsReported) {
  Harness h(2, 4, config(8, 64));
  h.add(20, 4);
  EXPECT_THROW(h.sched.schedule(), Error);
  Harness g(2, 4, config(8, 64));
  Sequence* s = g.add(5, 10);  // fits at first, outgrows 8 slots while decoding
  EXPECT_THROW(
      {
        for (int i = 0; i < 20; ++i) g.step();
      },
      Error);
  EXPECT_EQ(s->status, SeqStatus::Preempted);
  EXPECT_EQ(g.blocks.num_available_blocks(), 2);
}

TEST(Scheduler, NeverRunsMoreThanMaxNumSeqs) {
  Harness h(64, 16, config(3, 512));
  for (int i = 0; i < 7; ++i) h.add(5, 6);
  int finished_checks = 0;
  while (h.sched.has_work()) {
    const SchedulerOutput out = h.step();
    EXPECT_LE(static_cast<int>(out.scheduled.size()), 3);
    EXPECT_LE(h.sched.num_running(), 3);
    ++finished_checks;
    ASSERT_LT(finished_checks, 100);
  }
  for (const auto& s : h.seqs) EXPECT_EQ(s->num_tokens(), 11);
}

TEST(Scheduler, AdmissionSkipsTokensFoundInThePrefixCache) {
  Harness h(32, 16, config(8, 512), /*prefix_caching=*/true);
  std::vector<int> system(48);
  for (int i = 0; i < 48; ++i) system[static_cast<size_t>(i)] = 7 * i + 1;
  std::vector<int> p1 = system, p2 = system;
  p1.insert(p1.end(), {1, 2, 3});
  p2.insert(p2.end(), {4, 5, 6, 7, 8, 9, 10, 11, 12, 13});
  Sequence* first = h.add(p1, 3);
  while (first->status != SeqStatus::Finished) h.step();
  Sequence* second = h.add(p2, 3);
  const SchedulerOutput out = h.step();
  EXPECT_EQ(scheduled_tokens(out, second), 10);
  EXPECT_EQ(second->num_cached_tokens, 48);
  EXPECT_EQ(out.num_prefill_tokens, 10);
}

TEST(Scheduler, RemoveWorksInEveryState) {
  Harness h(8, 4, config(4, 8));
  Sequence* decoding = h.add(3, 50);
  Sequence* prefilling = h.add(20, 50);  // budget 8: chunked over steps
  Sequence* waiting = h.add(2, 50);
  h.step();  // decoding: 3 tokens, prefilling: first 5
  h.step();  // decoding: 1, prefilling: next 7
  EXPECT_EQ(prefilling->status, SeqStatus::Running);
  EXPECT_TRUE(prefilling->in_prefill());
  EXPECT_EQ(waiting->status, SeqStatus::Waiting);

  h.sched.remove(prefilling);
  EXPECT_EQ(prefilling->status, SeqStatus::Finished);
  EXPECT_TRUE(prefilling->block_table.empty());
  h.sched.remove(waiting);
  EXPECT_EQ(h.sched.num_waiting(), 0);

  // Drive the decoder past its blocks until a newcomer gets preempted, then remove it.
  Sequence* victim = h.add(10, 50);
  Sequence* preempted = nullptr;
  for (int i = 0; i < 40 && !preempted; ++i) {
    const SchedulerOutput out = h.step();
    if (!out.preempted.empty()) preempted = out.preempted[0];
  }
  ASSERT_EQ(preempted, victim);
  EXPECT_EQ(victim->status, SeqStatus::Preempted);
  h.sched.remove(victim);
  EXPECT_EQ(h.sched.num_waiting(), 0);
  h.sched.remove(decoding);
  h.sched.remove(decoding);  // twice is harmless
  EXPECT_FALSE(h.sched.has_work());
  EXPECT_EQ(h.blocks.num_available_blocks(), 8);
  EXPECT_EQ(h.blocks.check_invariants({}), "");
}

TEST(Scheduler, ForkedChildRunsBesideItsParentAndSharesItsPrompt) {
  Harness h(16, 4, config(8, 64));
  Sequence* parent = h.add(6, 4);
  h.step();  // prompt computed, first token sampled
  auto child = std::make_unique<Sequence>(*parent);
  child->seq_id = 99;
  child->sample_index = 1;
  child->block_table.clear();
  child->tokens.back() = 4242;  // its own first sample
  h.blocks.fork(*parent, *child);
  h.sched.add_forked(child.get());
  Sequence* c = child.get();
  h.seqs.push_back(std::move(child));
  EXPECT_EQ(h.sched.num_running(), 2);
  const SchedulerOutput out = h.step();
  EXPECT_EQ(scheduled_tokens(out, parent), 1);
  EXPECT_EQ(scheduled_tokens(out, c), 1);
  EXPECT_EQ(out.copies.size(), 1u) << "the shared partial block was copied once";
  EXPECT_EQ(parent->block_table[0], c->block_table[0]);
  EXPECT_NE(parent->block_table[1], c->block_table[1]);
}

}  // namespace
}  // namespace llmwb
