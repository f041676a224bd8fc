// Property test of the scheduler and block manager together: a model-free engine loop runs
// thousands of steps with random arrivals, prompt and output lengths, shared system prompts
// (prefix-cache hits), parallel samples (fork + copy-on-write), aborts at random moments,
// pools small enough to force preemption and budgets small enough to force chunked prefill.
//
// Instead of K/V the loop writes, into a shadow of every physical block slot, a fingerprint
// of the token prefix ending at that position (K/V at position i depends on tokens 0..i).
// Reading every computed position back through each live block table then checks that
// paging, copy-on-write, prefix reuse and eviction never hand a sequence foreign K/V.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "kv/block_manager.h"
#include "llmwb/telemetry.h"
#include "sched/scheduler.h"
#include "request/sequence.h"

namespace llmwb {
namespace {

struct SimConfig {
  std::string name;
  int num_blocks;
  int block_size;
  int max_num_seqs;
  int budget;
  bool chunked;
  bool prefix_caching;
  int max_prompt;
  int max_new;
  double arrival_rate;  // mean requests per step
  double abort_rate;    // chance per step that one live request is aborted
  double fork_rate;     // chance that a request asks for a second sample
  int arrival_steps;
  uint64_t seed;
  // Speculative decoding: a decoding sequence asks for up to this many draft slots a step; a
  // random prefix of its guesses is accepted and the rest rolled back (BlockManager::trim).
  int spec_max = 0;
};

void PrintTo(const SimConfig& c, std::ostream* os) { *os << c.name; }

uint64_t extend_fingerprint(uint64_t prev, int token) {
  uint64_t x = prev ^ (static_cast<uint64_t>(static_cast<uint32_t>(token)) + 0x9e3779b97f4a7c15ULL);
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 29);
}

struct SimSeq {
  std::unique_ptr<Sequence> seq;
  std::vector<uint64_t> fingerprint;  // fingerprint[i] covers tokens 0..i
  int start_step = 0;
  int end_step = -1;
  bool aborted = false;
  bool wants_fork = false;
};

class Simulation {
 public:
  explicit Simulation(const SimConfig& c)
      : c_(c),
        blocks_(c.num_blocks, c.block_size, c.prefix_caching),
        sched_(SchedulerConfig{c.max_num_seqs, c.budget, c.chunked}, blocks_),
        rng_(c.seed),
        shadow_(static_cast<size_t>(c.num_blocks) * static_cast<size_t>(c.block_size), 0) {
    std::uniform_int_distribution<int> len(c.block_size, 3 * c.block_size);
    for (int i = 0; i < 3; ++i) {  // system prompts shared by many requests
      std::vector<int> p(static_cast<size_t>(len(rng_)));
      for (int& t : p) t = token();
      system_prompts_.push_back(p);
    }
  }

  void run() {
    int step = 0;
    for (; step < c_.arrival_steps || sched_.has_work(); ++step) {
      ASSERT_LT(step, c_.arrival_steps + 200000) << "the loop never drained";
      if (step < c_.arrival_steps) arrive(step);
      abort_some(step);
      ASSERT_NO_FATAL_FAILURE(one_step(step));
      if (::testing::Test::HasFatalFailure()) return;
    }
    ASSERT_NO_FATAL_FAILURE(check_end());
  }

  int finished() const { return finished_; }
  uint64_t preemptions() const { return sched_.preemptions_total(); }
  int copies() const { return copies_; }
  int cached_tokens() const { return cached_tokens_; }
  int chunked_steps() const { return chunked_prefills_; }
  int rejected_guesses() const { return rejected_; }

 private:
  int token() { return std::uniform_int_distribution<int>(0, 40)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  // Largest total length the engine would accept: it fits the pool and, without chunked
  // prefill, a preempted sequence's recompute (all tokens but the last) fits one step.
  int max_total() const {
    int m = c_.num_blocks * c_.block_size;
    if (!c_.chunked) m = std::min(m, c_.budget + 1);
    return m;
  }

  SimSeq& track(std::unique_ptr<Sequence> s, int step) {
    SimSeq ss;
    uint64_t fp = 0;
    for (int t : s->tokens) ss.fingerprint.push_back(fp = extend_fingerprint(fp, t));
    ss.seq = std::move(s);
    ss.start_step = step;
    seqs_.push_back(std::move(ss));
    SimSeq& added = seqs_.back();
    live_.push_back(&added);
    index_[added.seq.get()] = &added;
    return added;
  }

  void arrive(int step) {
    std::poisson_distribution<int> n(c_.arrival_rate);
    for (int k = n(rng_); k > 0; --k) {
      std::vector<int> prompt;
      if (chance(0.5)) prompt = system_prompts_[std::uniform_int_distribution<size_t>(0, 2)(rng_)];
      const int tail = std::uniform_int_distribution<int>(1, c_.max_prompt)(rng_);
      for (int i = 0; i < tail; ++i) prompt.push_back(token());
      const int limit = max_total();
      if (static_cast<int>(prompt.size()) >= limit) prompt.resize(static_cast<size_t>(limit - 1));
      const int room = limit - static_cast<int>(prompt.size());
      const int max_new = std::uniform_int_distribution<int>(1, std::min(c_.max_new, room))(rng_);
      auto s = std::make_unique<Sequence>();
      s->seq_id = next_seq_id_++;
      s->request_id = next_request_id_++;
      s->arrival = s->request_id;
      s->num_prompt_tokens = static_cast<int>(prompt.size());
      s->max_total_tokens = s->num_prompt_tokens + max_new;
      s->tokens = std::move(prompt);
      SimSeq& ss = track(std::move(s), step);
      ss.wants_fork = chance(c_.fork_rate);
      sched_.add(ss.seq.get());
    }
  }

  std::vector<const Sequence*> live() const {
    std::vector<const Sequence*> v;
    for (const SimSeq* s : live_) v.push_back(s->seq.get());
    return v;
  }

  void end(SimSeq& s, int step) {
    sched_.remove(s.seq.get());
    EXPECT_EQ(s.seq->status, SeqStatus::Finished);
    EXPECT_TRUE(s.seq->block_table.empty());
    s.end_step = step;
    live_.erase(std::find(live_.begin(), live_.end(), &s));
  }

  void abort_some(int step) {
    if (!chance(c_.abort_rate)) return;
    if (live_.empty()) return;
    const uint64_t victim =
        live_[std::uniform_int_distribution<size_t>(0, live_.size() - 1)(rng_)]->seq->request_id;
    std::vector<SimSeq*> family;
    for (SimSeq* s : live_) {
      if (s->seq->request_id == victim) family.push_back(s);
    }
    for (SimSeq* s : family) {
      s->aborted = true;
      end(*s, step);
    }
  }

  uint64_t& slot(int block, int offset) {
    return shadow_[static_cast<size_t>(block) * static_cast<size_t>(c_.block_size) +
                   static_cast<size_t>(offset)];
  }

  static bool before(const Sequence* a, const Sequence* b) {
    return a->arrival != b->arrival ? a->arrival < b->arrival : a->seq_id < b->seq_id;
  }

  const Sequence* oldest_live() const {
    const Sequence* o = nullptr;
    for (const Sequence* s : live()) {
      if (!o || before(s, o)) o = s;
    }
    return o;
  }

  void one_step(int step) {
    for (Sequence* s : sched_.running()) {
      s->num_spec_tokens = 0;
      if (c_.spec_max == 0 || s->num_uncomputed() != 1 || s->num_tokens() <= s->num_prompt_tokens) continue;
      const int room = s->max_total_tokens - s->num_tokens() - 1;
      s->num_spec_tokens = std::min(room, std::uniform_int_distribution<int>(0, c_.spec_max)(rng_));
    }
    const Sequence* oldest = oldest_live();
    const std::set<const Sequence*> was_running(sched_.running().begin(), sched_.running().end());
    const SchedulerOutput out = sched_.schedule();

    // Limits and the shape of the output.
    int total = 0, prefill = 0;
    std::set<const Sequence*> seen;
    for (const ScheduledSeq& s : out.scheduled) {
      ASSERT_TRUE(seen.insert(s.seq).second) << "scheduled twice in one step";
      ASSERT_EQ(s.seq->status, SeqStatus::Running);
      ASSERT_GE(s.num_new_tokens, 1);
      ASSERT_LE(s.num_new_tokens, s.seq->num_uncomputed());
      if (!c_.chunked) {
        ASSERT_EQ(s.num_new_tokens, s.seq->num_uncomputed());
      }
      ASSERT_GE(static_cast<int>(s.seq->block_table.size()) * c_.block_size,
                s.seq->num_computed_tokens + s.num_new_tokens + s.num_spec_slots)
          << "scheduled tokens without slots";
      ASSERT_LE(s.num_spec_slots, s.seq->num_spec_tokens);
      total += s.num_new_tokens + s.num_spec_slots;
      if (s.num_new_tokens < s.seq->num_uncomputed()) ++chunked_prefills_;
      if (!(s.num_new_tokens == 1 && s.seq->num_uncomputed() == 1 &&
            s.seq->num_tokens() > s.seq->num_prompt_tokens)) {
        prefill += s.num_new_tokens;
      }
    }
    ASSERT_LE(total, c_.budget);
    ASSERT_LE(static_cast<int>(out.scheduled.size()), c_.max_num_seqs);
    // Forked samples join the running set directly; admission alone never exceeds the limit.
    int live_forks = 0;
    for (const Sequence* s : live()) live_forks += s->sample_index > 0;
    ASSERT_LE(sched_.num_running(), c_.max_num_seqs + live_forks);
    ASSERT_EQ(out.num_prefill_tokens + out.num_decode_tokens, total);
    ASSERT_EQ(out.num_prefill_tokens, prefill);
    // No admission in a step that preempted; victims are later than all who keep running.
    for (const Sequence* p : out.preempted) {
      for (const ScheduledSeq& s : out.scheduled) ASSERT_TRUE(was_running.count(s.seq));
      for (const Sequence* r : sched_.running()) ASSERT_TRUE(before(r, p));
    }
    // FCFS: every running sequence arrived before every waiting one.
    if (!sched_.running().empty() && !sched_.waiting().empty()) {
      const Sequence* latest_running =
          *std::max_element(sched_.running().begin(), sched_.running().end(), before);
      for (const Sequence* w : sched_.waiting()) ASSERT_TRUE(before(latest_running, w));
    }
    for (const Sequence* p : out.preempted) {
      ASSERT_EQ(p->status, SeqStatus::Preempted);
      ASSERT_TRUE(p->block_table.empty());
      ASSERT_EQ(p->num_computed_tokens, 0);
      ASSERT_EQ(p->num_cached_tokens, 0);
      ASSERT_FALSE(seen.count(p)) << "preempted and scheduled in the same step";
      ASSERT_NE(std::find(sched_.waiting().begin(), sched_.waiting().end(), p),
                sched_.waiting().end());
    }
    // The oldest live sequence always makes progress: FCFS admission plus latest-first
    // preemption means nothing can starve it.
    if (oldest) {
      ASSERT_TRUE(seen.count(oldest)) << "oldest sequence " << oldest->seq_id << " idle";
    }

    // The model runner: copies first, then K/V writes through the block tables.
    for (const BlockCopy& cp : out.copies) {
      ++copies_;
      for (int o = 0; o < c_.block_size; ++o) slot(cp.dst, o) = slot(cp.src, o);
    }
    std::map<int, int> holders;
    for (const Sequence* s : live()) {
      for (int b : s->block_table) ++holders[b];
    }
    for (const ScheduledSeq& s : out.scheduled) {
      Sequence& seq = *s.seq;
      const SimSeq& ss = find(seq);
      for (int p = seq.num_computed_tokens; p < seq.num_computed_tokens + s.num_new_tokens; ++p) {
        const int b = seq.block_table[static_cast<size_t>(p / c_.block_size)];
        ASSERT_EQ(holders[b], 1) << "writing into block " << b << " shared by " << holders[b];
        slot(b, p % c_.block_size) = ss.fingerprint[static_cast<size_t>(p)];
      }
      // Guesses: K/V of tokens that may yet be rejected, written past the new token.
      std::vector<int>& guesses = seq.spec_tokens;
      guesses.clear();
      uint64_t fp = ss.fingerprint.back();
      for (int g = 0; g < s.num_spec_slots; ++g) {
        guesses.push_back(token());
        fp = extend_fingerprint(fp, guesses.back());
        const int p = seq.num_tokens() + g;
        const int b = seq.block_table[static_cast<size_t>(p / c_.block_size)];
        ASSERT_EQ(holders[b], 1) << "guess written into block " << b << " shared by " << holders[b];
        slot(b, p % c_.block_size) = fp;
      }
    }
    for (const ScheduledSeq& s : out.scheduled) {
      s.seq->num_computed_tokens += s.num_new_tokens;
      blocks_.commit_computed(*s.seq);
    }
    ASSERT_NO_FATAL_FAILURE(check_kv());

    // Verification: a random prefix of the guesses is accepted, then the target's own token;
    // the accepted guesses' K/V stays, the rest is rolled back.
    for (const ScheduledSeq& s : out.scheduled) {
      Sequence& seq = *s.seq;
      if (s.num_spec_slots == 0) continue;
      const std::vector<int> guesses = std::move(seq.spec_tokens);
      seq.spec_tokens.clear();
      SimSeq& ss = find(seq);
      const int accepted = std::uniform_int_distribution<int>(0, static_cast<int>(guesses.size()))(rng_);
      rejected_ += static_cast<int>(guesses.size()) - accepted;
      for (int g = 0; g < accepted; ++g) {
        seq.tokens.push_back(guesses[static_cast<size_t>(g)]);
        ss.fingerprint.push_back(extend_fingerprint(ss.fingerprint.back(), seq.tokens.back()));
      }
      seq.num_computed_tokens += accepted;
      blocks_.commit_computed(seq);
      blocks_.trim(seq);
      ASSERT_EQ(static_cast<int>(seq.block_table.size()), (seq.num_computed_tokens + c_.block_size - 1) / c_.block_size);
      const int t = token();
      seq.tokens.push_back(t);
      ss.fingerprint.push_back(extend_fingerprint(ss.fingerprint.back(), t));
      if (seq.num_tokens() == seq.max_total_tokens) {
        end(ss, step);
        ++finished_;
      }
    }
    ASSERT_NO_FATAL_FAILURE(check_kv());

    // The sampler, and requests finishing at their length (forks after the first sample).
    std::vector<const Sequence*> to_fork;
    for (const ScheduledSeq& s : out.scheduled) {
      Sequence& seq = *s.seq;
      if (s.num_spec_slots > 0 || seq.num_computed_tokens != seq.num_tokens()) continue;
      SimSeq& ss = find(seq);
      if (seq.num_cached_tokens > 0 && seq.num_tokens() == seq.num_prompt_tokens) {
        cached_tokens_ += seq.num_cached_tokens;
      }
      const int t = token();
      seq.tokens.push_back(t);
      ss.fingerprint.push_back(extend_fingerprint(ss.fingerprint.back(), t));
      if (seq.num_tokens() == seq.max_total_tokens) {
        end(ss, step);
        ++finished_;
      } else if (ss.wants_fork) {
        ss.wants_fork = false;
        to_fork.push_back(&seq);
      }
    }
    for (const Sequence* parent : to_fork) {
      auto child = std::make_unique<Sequence>(*parent);
      child->seq_id = next_seq_id_++;
      child->sample_index = 1;
      child->block_table.clear();
      child->tokens.back() = token();  // its own first sample
      blocks_.fork(*parent, *child);
      EXPECT_EQ(child->num_computed_tokens, parent->num_computed_tokens);
      SimSeq& cs = track(std::move(child), step);
      sched_.add_forked(cs.seq.get());
    }

    // Accounting.
    const std::vector<const Sequence*> now = live();
    ASSERT_EQ(blocks_.check_invariants(now), "") << "step " << step;
    StepTelemetry t;
    blocks_.fill_telemetry(now, t);
    ASSERT_EQ(t.blocks_used + t.blocks_cached + t.blocks_free, c_.num_blocks);
    ASSERT_EQ(blocks_.num_available_blocks(), t.blocks_cached + t.blocks_free);
    if (!c_.prefix_caching) {
      ASSERT_EQ(t.blocks_cached, 0);
    }
    ASSERT_LE(t.slots_filled, t.slots_allocated);
    ASSERT_EQ(t.slots_allocated, static_cast<uint64_t>(t.blocks_used) * c_.block_size);
    // A block held by two tables sits at the same logical position in both, and without
    // prefix caching only samples of one request (a fork) may share it.
    std::map<int, std::pair<const Sequence*, size_t>> first_holder;
    for (const Sequence* s : now) {
      for (size_t i = 0; i < s->block_table.size(); ++i) {
        auto [it, fresh] = first_holder.emplace(s->block_table[i], std::make_pair(s, i));
        if (fresh) continue;
        ASSERT_EQ(it->second.second, i) << "block " << s->block_table[i] << " at two positions";
        if (!c_.prefix_caching) {
          ASSERT_EQ(it->second.first->request_id, s->request_id)
              << "block " << s->block_table[i] << " has two owners";
        }
      }
    }
  }

  SimSeq& find(const Sequence& seq) { return *index_.at(&seq); }

  // Every computed position of every live sequence reads back its own prefix's K/V.
  void check_kv() {
    for (const SimSeq* ss : live_) {
      const Sequence& s = *ss->seq;
      for (int p = 0; p < s.num_computed_tokens; ++p) {
        const int b = s.block_table[static_cast<size_t>(p / c_.block_size)];
        ASSERT_EQ(slot(b, p % c_.block_size), ss->fingerprint[static_cast<size_t>(p)])
            << "sequence " << s.seq_id << " reads wrong K/V at position " << p;
      }
    }
  }

  void check_end() {
    ASSERT_FALSE(sched_.has_work());
    ASSERT_EQ(blocks_.check_invariants({}), "");
    StepTelemetry t;
    blocks_.fill_telemetry({}, t);
    EXPECT_EQ(t.blocks_used, 0);
    EXPECT_EQ(t.blocks_cached + t.blocks_free, c_.num_blocks);
    EXPECT_EQ(blocks_.num_available_blocks(), c_.num_blocks);

    // Every sequence not aborted reached exactly its requested length, and within a bound:
    // once every earlier sequence is gone it is the oldest and computes >= 1 token a step.
    std::vector<const SimSeq*> order;
    for (const SimSeq& s : seqs_) order.push_back(&s);
    std::sort(order.begin(), order.end(),
              [](const SimSeq* a, const SimSeq* b) { return before(a->seq.get(), b->seq.get()); });
    int earlier_end = 0;
    for (const SimSeq* s : order) {
      ASSERT_GE(s->end_step, 0);
      if (!s->aborted) {
        EXPECT_EQ(s->seq->num_tokens(), s->seq->max_total_tokens);
        EXPECT_LE(s->end_step, std::max(s->start_step, earlier_end) + s->seq->max_total_tokens)
            << "sequence " << s->seq->seq_id << " starved";
      }
      earlier_end = std::max(earlier_end, s->end_step);
    }
  }

  SimConfig c_;
  BlockManager blocks_;
  Scheduler sched_;
  std::mt19937_64 rng_;
  std::vector<uint64_t> shadow_;
  std::vector<std::vector<int>> system_prompts_;
  std::deque<SimSeq> seqs_;    // every sequence ever (stable addresses)
  std::vector<SimSeq*> live_;  // those not finished or aborted
  std::unordered_map<const Sequence*, SimSeq*> index_;
  uint64_t next_seq_id_ = 1, next_request_id_ = 1;
  int finished_ = 0, copies_ = 0, cached_tokens_ = 0, chunked_prefills_ = 0, rejected_ = 0;
};

class KvProperty : public ::testing::TestWithParam<SimConfig> {};

TEST_P(KvProperty, RandomWorkloadKeepsEveryInvariantAndFinishesEveryRequest) {
  const SimConfig& c = GetParam();
  Simulation sim(c);
  ASSERT_NO_FATAL_FAILURE(sim.run());
  std::printf("%s: %d finished, %llu preemptions, %d copies, %d cached tokens, %d chunks\n",
              c.name.c_str(), sim.finished(), static_cast<unsigned long long>(sim.preemptions()),
              sim.copies(), sim.cached_tokens(), sim.chunked_steps());
  // The workload must actually exercise what the configuration is meant to stress.
  EXPECT_GT(sim.finished(), 100);
  if (c.num_blocks * c.block_size < 300 && c.max_num_seqs > 1) {
    EXPECT_GT(sim.preemptions(), 0u) << "no preemption";
  }
  if (c.prefix_caching) {
    EXPECT_GT(sim.cached_tokens(), 0) << "no prefix-cache hit";
  }
  if (c.fork_rate > 0 && c.block_size > 1) {  // with 1-token blocks nothing is partly full
    EXPECT_GT(sim.copies(), 0) << "no copy-on-write";
  }
  if (c.chunked && c.budget < c.max_prompt) {
    EXPECT_GT(sim.chunked_steps(), 0) << "no chunking";
  }
  if (c.spec_max > 0) {
    EXPECT_GT(sim.rejected_guesses(), 0) << "no rollback";
  }
}

// name, blocks, block size, max seqs, budget, chunked, caching, max prompt tail, max new,
// arrival rate, abort rate, fork rate, arrival steps, seed
INSTANTIATE_TEST_SUITE_P(Workloads, KvProperty,
                         ::testing::Values(SimConfig{"TinyPoolChunkedCachingForks", 12, 4, 6, 16,
                                                     true, true, 30, 20, 0.3, 0.01, 0.2, 3000, 1},
                                           SimConfig{"TinyPoolNoCachingNoChunking", 10, 4, 4, 40,
                                                     false, false, 20, 20, 0.3, 0.01, 0.2, 3000, 2},
                                           SimConfig{"LargerBlocksCaching", 16, 16, 8, 64, true,
                                                     true, 100, 40, 0.15, 0.005, 0.1, 3000, 3},
                                           SimConfig{"BlockSizeOne", 40, 1, 5, 12, true, true, 20,
                                                     15, 0.3, 0.01, 0.2, 3000, 4},
                                           SimConfig{"OneTokenBudget", 30, 4, 1, 1, true, true, 10,
                                                     8, 0.1, 0.01, 0.0, 3000, 5},
                                           SimConfig{"ManySeqsRoomyPool", 256, 8, 32, 128, true,
                                                     true, 60, 60, 1.0, 0.02, 0.1, 3000, 6},
                                           SimConfig{"SpeculationTinyPoolCachingForks", 16, 4, 6, 24,
                                                     true, true, 30, 30, 0.3, 0.01, 0.2, 3000, 7, 5},
                                           SimConfig{"SpeculationRoomyPool", 200, 8, 24, 128, true,
                                                     true, 60, 60, 0.8, 0.02, 0.1, 3000, 8, 8}),
                         [](const ::testing::TestParamInfo<SimConfig>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace llmwb
