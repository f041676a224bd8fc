// Tests of the PagedAttention block manager: on-demand allocation, accounting, fork and
// copy-on-write, prefix caching (hits, the one-token cap, exact chains, duplicates), LRU
// eviction of cached blocks and telemetry.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <vector>

#include "kv/block_hash.h"
#include "kv/block_manager.h"
#include "llmwb/errors.h"
#include "llmwb/telemetry.h"
#include "request/sequence.h"

namespace llmwb {
namespace {

constexpr int kBlock = 16;

Sequence make_seq(uint64_t id, std::vector<int> tokens) {
  Sequence s;
  s.seq_id = id;
  s.request_id = id;
  s.arrival = id;
  s.num_prompt_tokens = static_cast<int>(tokens.size());
  s.max_total_tokens = s.num_prompt_tokens + 64;
  s.tokens = std::move(tokens);
  return s;
}

// Tokens first, first+1, ...: distinct runs give distinct blocks.
std::vector<int> run_of(int n, int first) {
  std::vector<int> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), first);
  return v;
}

std::vector<int> concat(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Gives seq slots for all its tokens, marks them computed and commits them, as the engine
// does after a forward pass.
void compute_all(BlockManager& bm, Sequence& seq) {
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(bm.append_slots(seq, seq.num_uncomputed(), &copies));
  seq.num_computed_tokens = seq.num_tokens();
  bm.commit_computed(seq);
}

StepTelemetry telemetry(const BlockManager& bm, const std::vector<const Sequence*>& live) {
  StepTelemetry t;
  bm.fill_telemetry(live, t);
  return t;
}

void expect_counts(const BlockManager& bm, const std::vector<const Sequence*>& live, int used,
                   int cached, int free) {
  EXPECT_EQ(bm.check_invariants(live), "");
  const StepTelemetry t = telemetry(bm, live);
  EXPECT_EQ(t.blocks_used, used);
  EXPECT_EQ(t.blocks_cached, cached);
  EXPECT_EQ(t.blocks_free, free);
  EXPECT_EQ(t.blocks_total, bm.num_blocks());
  EXPECT_EQ(bm.num_available_blocks(), cached + free);
}

TEST(BlockManager, RejectsEmptyPoolAndZeroBlockSize) {
  EXPECT_THROW(BlockManager(0, 16, true), Error);
  EXPECT_THROW(BlockManager(8, 0, false), Error);
}

TEST(BlockManager, AllocatesBlocksOnDemandAndAccountsAfterEveryOperation) {
  BlockManager bm(8, kBlock, false);
  Sequence a = make_seq(1, run_of(40, 100));
  expect_counts(bm, {&a}, 0, 0, 8);

  std::vector<BlockCopy> copies;
  ASSERT_TRUE(bm.append_slots(a, 40, &copies));
  EXPECT_EQ(a.block_table.size(), 3u);  // ceil(40 / 16)
  EXPECT_TRUE(copies.empty());
  a.num_computed_tokens = 40;
  expect_counts(bm, {&a}, 3, 0, 5);

  a.tokens.push_back(7);  // 41 tokens still fit in 3 blocks
  ASSERT_TRUE(bm.append_slots(a, 1, &copies));
  EXPECT_EQ(a.block_table.size(), 3u);
  a.num_computed_tokens = 41;
  expect_counts(bm, {&a}, 3, 0, 5);

  for (int i = 0; i < 8; ++i) a.tokens.push_back(i);
  ASSERT_TRUE(bm.append_slots(a, 8, &copies));  // 49 slots -> a 4th block
  EXPECT_EQ(a.block_table.size(), 4u);
  expect_counts(bm, {&a}, 4, 0, 4);

  const std::vector<int> table = a.block_table;
  EXPECT_EQ(std::set<int>(table.begin(), table.end()).size(), 4u) << "distinct blocks";

  bm.release(a);
  EXPECT_TRUE(a.block_table.empty());
  expect_counts(bm, {}, 0, 0, 8);
}

// Freed blocks are reused before blocks never written (their pages are resident and warm; a
// pool cycled through in order faults fresh pages into every step until all of it is touched).
TEST(BlockManager, ReusesFreedBlocksBeforeUntouchedOnes) {
  BlockManager bm(64, kBlock, false);
  Sequence a = make_seq(1, run_of(48, 100));
  compute_all(bm, a);
  const std::set<int> first(a.block_table.begin(), a.block_table.end());
  ASSERT_EQ(first.size(), 3u);
  for (int round = 0; round < 4; ++round) {
    bm.release(a);
    a = make_seq(2 + round, run_of(48, 1000 * (round + 1)));
    compute_all(bm, a);
    EXPECT_EQ(std::set<int>(a.block_table.begin(), a.block_table.end()), first) << "round " << round;
  }
  // A longer sequence takes the freed blocks and then untouched ones.
  bm.release(a);
  Sequence b = make_seq(9, run_of(80, 5000));
  compute_all(bm, b);
  ASSERT_EQ(b.block_table.size(), 5u);
  for (int blk : first) EXPECT_EQ(std::count(b.block_table.begin(), b.block_table.end(), blk), 1) << blk;
  expect_counts(bm, {&b}, 5, 0, 59);
}

TEST(BlockManager, AppendFailsAndChangesNothingWhenBlocksRunOut) {
  BlockManager bm(4, kBlock, false);
  Sequence a = make_seq(1, run_of(50, 0));
  Sequence b = make_seq(2, run_of(30, 500));
  ASSERT_TRUE(bm.append_slots(a, 50, nullptr));  // 4 blocks: the whole pool
  EXPECT_FALSE(bm.can_append(b, 1));
  EXPECT_FALSE(bm.append_slots(b, 30, nullptr));
  EXPECT_TRUE(b.block_table.empty());
  a.num_computed_tokens = 50;
  expect_counts(bm, {&a, &b}, 4, 0, 0);
  // a's 4th block has room for 14 more tokens but not 15.
  EXPECT_TRUE(bm.can_append(a, 14));
  EXPECT_FALSE(bm.can_append(a, 15));
  EXPECT_FALSE(bm.append_slots(a, 15, nullptr));
  EXPECT_EQ(a.block_table.size(), 4u);
}

TEST(BlockManager, ForkSharesBlocksAndAppendCopiesTheSharedPartialBlock) {
  BlockManager bm(8, kBlock, false);
  Sequence parent = make_seq(1, run_of(20, 0));
  compute_all(bm, parent);  // block 0 full, block 1 holds 4 tokens
  Sequence child = make_seq(2, parent.tokens);
  bm.fork(parent, child);
  EXPECT_EQ(child.block_table, parent.block_table);
  EXPECT_EQ(child.num_computed_tokens, 20);
  {
    const StepTelemetry t = telemetry(bm, {&parent, &child});
    EXPECT_EQ(t.blocks[static_cast<size_t>(parent.block_table[0])].ref_count, 2);
    EXPECT_EQ(t.blocks[static_cast<size_t>(parent.block_table[1])].ref_count, 2);
    EXPECT_EQ(t.slots_allocated, 2u * kBlock) << "shared blocks count once";
    EXPECT_EQ(t.slots_filled, 20u);
  }
  expect_counts(bm, {&parent, &child}, 2, 0, 6);

  // The child samples a different token: its write would land in shared block 1.
  child.tokens.push_back(1000);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(bm.append_slots(child, 1, &copies));
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].src, parent.block_table[1]);
  EXPECT_EQ(copies[0].dst, child.block_table[1]);
  EXPECT_NE(child.block_table[1], parent.block_table[1]);
  EXPECT_EQ(child.block_table[0], parent.block_table[0]) << "full block stays shared";
  child.num_computed_tokens = 21;
  {
    const StepTelemetry t = telemetry(bm, {&parent, &child});
    EXPECT_EQ(t.blocks[static_cast<size_t>(parent.block_table[0])].ref_count, 2);
    EXPECT_EQ(t.blocks[static_cast<size_t>(parent.block_table[1])].ref_count, 1);
    EXPECT_EQ(t.blocks[static_cast<size_t>(child.block_table[1])].ref_count, 1);
    EXPECT_EQ(t.blocks[static_cast<size_t>(child.block_table[1])].filled, 5);
  }
  expect_counts(bm, {&parent, &child}, 3, 0, 5);

  // The parent now owns its block alone: no second copy.
  parent.tokens.push_back(2000);
  copies.clear();
  ASSERT_TRUE(bm.append_slots(parent, 1, &copies));
  EXPECT_TRUE(copies.empty());

  bm.release(parent);
  expect_counts(bm, {&child}, 2, 0, 6);
  bm.release(child);
  expect_counts(bm, {}, 0, 0, 8);
}

TEST(BlockManager, ForkAtABlockBoundaryAppendsANewBlockWithoutCopy) {
  BlockManager bm(8, kBlock, false);
  Sequence parent = make_seq(1, run_of(32, 0));
  compute_all(bm, parent);
  Sequence child = make_seq(2, parent.tokens);
  bm.fork(parent, child);
  child.tokens.push_back(5);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(bm.append_slots(child, 1, &copies));
  EXPECT_TRUE(copies.empty());
  ASSERT_EQ(child.block_table.size(), 3u);
  EXPECT_EQ(std::vector<int>(child.block_table.begin(), child.block_table.begin() + 2),
            parent.block_table);
  expect_counts(bm, {&parent, &child}, 3, 0, 5);
}

TEST(BlockManager, CopyOnWriteNeedsABlockAndFailsCleanlyWithoutOne) {
  BlockManager bm(2, kBlock, false);
  Sequence parent = make_seq(1, run_of(20, 0));
  compute_all(bm, parent);  // takes both blocks
  Sequence child = make_seq(2, parent.tokens);
  bm.fork(parent, child);
  child.tokens.push_back(9);
  EXPECT_FALSE(bm.can_append(child, 1));
  std::vector<BlockCopy> copies;
  EXPECT_FALSE(bm.append_slots(child, 1, &copies));
  EXPECT_TRUE(copies.empty());
  EXPECT_EQ(child.block_table, parent.block_table);
  expect_counts(bm, {&parent, &child}, 2, 0, 0);
}

TEST(BlockManager, SecondSequenceWithSameThreeBlocksGets48CachedTokens) {
  const std::vector<int> shared = run_of(48, 10);
  for (bool caching : {true, false}) {
    SCOPED_TRACE(caching ? "caching on" : "caching off");
    BlockManager bm(16, kBlock, caching);
    Sequence a = make_seq(1, concat(shared, run_of(9, 900)));
    compute_all(bm, a);
    const std::vector<int> a_table = a.block_table;
    bm.release(a);
    expect_counts(bm, {}, 0, caching ? 3 : 0, caching ? 13 : 16);

    Sequence b = make_seq(2, concat(shared, run_of(20, 700)));
    const int expected = caching ? 48 : 0;
    EXPECT_EQ(bm.count_cached_prefix(b), expected);
    EXPECT_EQ(bm.acquire_prefix(b), expected);
    EXPECT_EQ(b.num_computed_tokens, expected);
    EXPECT_EQ(b.num_cached_tokens, expected);
    if (caching) {
      EXPECT_EQ(b.block_table, std::vector<int>(a_table.begin(), a_table.begin() + 3));
      expect_counts(bm, {&b}, 3, 0, 13);
    } else {
      EXPECT_TRUE(b.block_table.empty());
    }
    ASSERT_TRUE(bm.append_slots(b, b.num_uncomputed(), nullptr));
    EXPECT_EQ(b.block_table.size(), 5u);  // ceil(68 / 16)
    EXPECT_EQ(bm.check_invariants({&b}), "");
  }
}

TEST(BlockManager, PrefixHitLeavesAtLeastOneTokenToCompute) {
  BlockManager bm(16, kBlock, true);
  const std::vector<int> prompt = run_of(48, 3);
  Sequence a = make_seq(1, concat(prompt, {1}));
  compute_all(bm, a);  // 3 full blocks hashed
  bm.release(a);

  Sequence exact = make_seq(2, prompt);  // 48 tokens, all cached: only 2 blocks may be taken
  EXPECT_EQ(bm.count_cached_prefix(exact), 32);
  Sequence one_more = make_seq(3, concat(prompt, {77}));
  EXPECT_EQ(bm.count_cached_prefix(one_more), 48);
  Sequence shorter = make_seq(4, run_of(17, 3));
  EXPECT_EQ(bm.count_cached_prefix(shorter), 16);
  Sequence tiny = make_seq(5, run_of(16, 3));
  EXPECT_EQ(bm.count_cached_prefix(tiny), 0);
}

TEST(BlockManager, PrefixMatchStopsAtFirstDifferingBlockEvenIfLaterBlocksMatch) {
  BlockManager bm(16, kBlock, true);
  Sequence a = make_seq(1, concat(run_of(48, 0), {1}));
  compute_all(bm, a);
  bm.release(a);
  // Same blocks 0 and 2, different block 1: block 2's hash covers its whole prefix.
  std::vector<int> tokens = a.tokens;
  tokens[20] = 4444;
  Sequence b = make_seq(2, tokens);
  EXPECT_EQ(bm.count_cached_prefix(b), 16);
  // Same tokens, shifted by one position: nothing matches.
  Sequence c = make_seq(3, concat({-1}, a.tokens));
  EXPECT_EQ(bm.count_cached_prefix(c), 0);
}

TEST(BlockManager, PrefixHitSharesBlocksOfARunningSequence) {
  BlockManager bm(16, kBlock, true);
  Sequence a = make_seq(1, run_of(40, 0));
  compute_all(bm, a);  // 2 full blocks registered while a is still running
  Sequence b = make_seq(2, run_of(40, 0));
  EXPECT_EQ(bm.acquire_prefix(b), 32);
  EXPECT_EQ(std::vector<int>(a.block_table.begin(), a.block_table.begin() + 2), b.block_table);
  const StepTelemetry t = telemetry(bm, {&a, &b});
  EXPECT_EQ(t.blocks[static_cast<size_t>(b.block_table[0])].ref_count, 2);
  EXPECT_TRUE(t.blocks[static_cast<size_t>(b.block_table[0])].cached);
  EXPECT_FALSE(t.blocks[static_cast<size_t>(a.block_table[2])].cached) << "partial block";
  ASSERT_TRUE(bm.append_slots(b, 8, nullptr));
  expect_counts(bm, {&a, &b}, 4, 0, 12);
  bm.release(a);
  expect_counts(bm, {&b}, 3, 0, 13);  // a's partial block is unhashed: straight to free
  bm.release(b);
  expect_counts(bm, {}, 0, 2, 14);
}

TEST(BlockManager, DuplicateBlockKeepsFirstRegistrationAndItsOwnerKeepsItsBlock) {
  BlockManager bm(16, kBlock, true);
  // Two identical prompts computed side by side (neither could hit the other's cache).
  Sequence a = make_seq(1, run_of(49, 0));
  Sequence b = make_seq(2, run_of(49, 0));
  ASSERT_TRUE(bm.append_slots(a, 49, nullptr));
  ASSERT_TRUE(bm.append_slots(b, 49, nullptr));
  a.num_computed_tokens = b.num_computed_tokens = 49;
  bm.commit_computed(a);
  bm.commit_computed(b);
  EXPECT_EQ(bm.check_invariants({&a, &b}), "");
  const StepTelemetry t = telemetry(bm, {&a, &b});
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(t.blocks[static_cast<size_t>(a.block_table[static_cast<size_t>(i)])].cached);
    EXPECT_FALSE(t.blocks[static_cast<size_t>(b.block_table[static_cast<size_t>(i)])].cached);
  }
  const std::vector<int> first(a.block_table.begin(), a.block_table.begin() + 3);
  bm.release(b);  // b's blocks are unhashed: they go straight to the free list
  bm.release(a);
  expect_counts(bm, {}, 0, 3, 13);
  Sequence c = make_seq(3, run_of(49, 0));
  EXPECT_EQ(bm.acquire_prefix(c), 48);
  EXPECT_EQ(c.block_table, first);
}

TEST(BlockManager, CommitOnlyHashesBlocksWhoseTokensAreAllComputed) {
  BlockManager bm(16, kBlock, true);
  Sequence a = make_seq(1, run_of(64, 0));
  ASSERT_TRUE(bm.append_slots(a, 64, nullptr));  // slots for 4 blocks
  a.num_computed_tokens = 40;                    // but only 2.5 blocks computed
  bm.commit_computed(a);
  bm.release(a);
  expect_counts(bm, {}, 0, 2, 14);
  Sequence b = make_seq(2, run_of(64, 0));
  EXPECT_EQ(bm.count_cached_prefix(b), 32);
}

TEST(BlockManager, WithPrefixCachingOffNothingIsHashedOrCached) {
  BlockManager bm(8, kBlock, false);
  Sequence a = make_seq(1, run_of(64, 0));
  compute_all(bm, a);
  const StepTelemetry t = telemetry(bm, {&a});
  for (const BlockState& s : t.blocks) EXPECT_FALSE(s.cached);
  bm.release(a);
  expect_counts(bm, {}, 0, 0, 8);
  Sequence b = make_seq(2, run_of(64, 0));
  EXPECT_EQ(bm.count_cached_prefix(b), 0);
}

TEST(BlockManager, EvictsLeastRecentlyReleasedCachedBlockTailFirst) {
  // 6 blocks: a and b each leave 2 cached blocks; 2 stay free.
  BlockManager bm(6, kBlock, true);
  Sequence a = make_seq(1, concat(run_of(32, 0), {1}));
  Sequence b = make_seq(2, concat(run_of(32, 1000), {1}));
  compute_all(bm, a);
  compute_all(bm, b);
  bm.release(a);  // released first: least recently used
  bm.release(b);
  expect_counts(bm, {}, 0, 4, 2);
  auto cached_of = [&](int first) {
    Sequence probe = make_seq(99, concat(run_of(32, first), {1}));
    return bm.count_cached_prefix(probe);
  };
  EXPECT_EQ(cached_of(0), 32);
  EXPECT_EQ(cached_of(1000), 32);

  Sequence c = make_seq(3, run_of(200, 5000));
  auto grow = [&](int n) {  // one more chunk of c, computed
    const bool ok = bm.append_slots(c, n, nullptr);
    c.num_computed_tokens += n;
    return ok;
  };
  ASSERT_TRUE(grow(32));  // free blocks go first
  EXPECT_EQ(cached_of(0), 32);
  EXPECT_EQ(cached_of(1000), 32);
  ASSERT_TRUE(grow(16));  // evicts a's tail block
  EXPECT_EQ(cached_of(0), 16);
  EXPECT_EQ(cached_of(1000), 32);
  expect_counts(bm, {&c}, 3, 3, 0);
  ASSERT_TRUE(grow(16));  // then a's head block
  EXPECT_EQ(cached_of(0), 0);
  EXPECT_EQ(cached_of(1000), 32);
  ASSERT_TRUE(grow(16));  // then b's tail
  EXPECT_EQ(cached_of(1000), 16);
  expect_counts(bm, {&c}, 5, 1, 0);
}

TEST(BlockManager, ReusingACachedPrefixMakesItMostRecentlyUsed) {
  BlockManager bm(4, kBlock, true);
  Sequence a = make_seq(1, concat(run_of(16, 0), {1}));
  Sequence b = make_seq(2, concat(run_of(16, 1000), {1}));
  compute_all(bm, a);
  compute_all(bm, b);
  bm.release(a);
  bm.release(b);  // LRU: a's block, then b's
  Sequence a2 = make_seq(3, concat(run_of(16, 0), {2}));
  EXPECT_EQ(bm.acquire_prefix(a2), 16);
  bm.release(a2);  // a's block is now the most recent
  Sequence filler = make_seq(4, run_of(64, 7000));
  ASSERT_TRUE(bm.append_slots(filler, 48, nullptr));  // 2 free + 1 eviction
  Sequence probe_a = make_seq(5, concat(run_of(16, 0), {1}));
  Sequence probe_b = make_seq(6, concat(run_of(16, 1000), {1}));
  EXPECT_EQ(bm.count_cached_prefix(probe_a), 16);
  EXPECT_EQ(bm.count_cached_prefix(probe_b), 0);
}

TEST(BlockManager, CanAppendCountsCachedPrefixBlocksItWouldTakeFromTheEvictableSet) {
  BlockManager bm(4, kBlock, true);
  Sequence a = make_seq(1, concat(run_of(48, 0), {1}));
  compute_all(bm, a);
  bm.release(a);  // 3 cached + 1 free = 4 available
  EXPECT_EQ(bm.num_available_blocks(), 4);
  Sequence b = make_seq(2, concat(run_of(48, 0), run_of(40, 500)));  // 88 tokens, 48 cached
  // After taking its 3 cached blocks only 1 block is left: room for 16 new tokens.
  EXPECT_TRUE(bm.can_append(b, 16));
  EXPECT_FALSE(bm.can_append(b, 17));
  Sequence c = make_seq(3, run_of(64, 9000));  // no prefix: may evict all 3
  EXPECT_TRUE(bm.can_append(c, 64));
  EXPECT_FALSE(bm.can_append(c, 65));
}

TEST(BlockManager, ReleaseWorksInEveryState) {
  BlockManager bm(8, kBlock, true);
  Sequence never = make_seq(1, run_of(10, 0));
  bm.release(never);  // no blocks at all
  EXPECT_TRUE(never.block_table.empty());

  Sequence mid = make_seq(2, run_of(100, 0));  // slots taken, only part computed
  ASSERT_TRUE(bm.append_slots(mid, 64, nullptr));
  mid.num_computed_tokens = 0;
  bm.release(mid);
  expect_counts(bm, {}, 0, 0, 8);

  Sequence prefix_only = make_seq(3, run_of(40, 0));
  compute_all(bm, prefix_only);
  bm.release(prefix_only);
  Sequence holder = make_seq(4, run_of(40, 0));
  bm.acquire_prefix(holder);  // holds cached blocks, no new slots yet
  bm.release(holder);
  bm.release(holder);  // twice is harmless
  expect_counts(bm, {}, 0, 2, 6);
}

TEST(BlockManager, TelemetryReportsOwnersFillAndSlots) {
  BlockManager bm(8, kBlock, true);
  Sequence a = make_seq(7, run_of(20, 0));
  compute_all(bm, a);
  ASSERT_TRUE(bm.append_slots(a, 30, nullptr));  // slots up to 50: 4 blocks, 20 filled
  const StepTelemetry t = telemetry(bm, {&a});
  EXPECT_EQ(t.block_size, kBlock);
  EXPECT_EQ(t.slots_allocated, 4u * kBlock);
  EXPECT_EQ(t.slots_filled, 20u);
  const auto& s0 = t.blocks[static_cast<size_t>(a.block_table[0])];
  EXPECT_EQ(s0.owner, 7);
  EXPECT_EQ(s0.filled, 16);
  EXPECT_TRUE(s0.cached);
  EXPECT_EQ(t.blocks[static_cast<size_t>(a.block_table[1])].filled, 4);
  EXPECT_EQ(t.blocks[static_cast<size_t>(a.block_table[3])].filled, 0);
  int unowned = 0;
  for (const BlockState& s : t.blocks) unowned += s.owner == -1;
  EXPECT_EQ(unowned, 4);
}

TEST(BlockManager, InvariantCheckDetectsTablesThatDisagreeWithRefCounts) {
  BlockManager bm(4, kBlock, false);
  Sequence a = make_seq(1, run_of(20, 0));
  compute_all(bm, a);
  EXPECT_EQ(bm.check_invariants({&a}), "");
  EXPECT_NE(bm.check_invariants({}), "") << "a holds blocks the check was not told about";
  Sequence forged = a;  // claims a's blocks without the manager knowing
  EXPECT_NE(bm.check_invariants({&a, &forged}), "");
  Sequence dup = make_seq(2, run_of(4, 0));
  dup.block_table = {a.block_table[0], a.block_table[0]};
  EXPECT_NE(bm.check_invariants({&dup}), "");
}

TEST(BlockHash, DependsOnEveryTokenTheirOrderAndTheParent) {
  const std::vector<int> t = run_of(16, 0);
  const uint64_t h = hash_block_tokens(kRootBlockHash, t.data(), 16);
  EXPECT_EQ(h, hash_block_tokens(kRootBlockHash, t.data(), 16));
  EXPECT_NE(h, hash_block_tokens(h, t.data(), 16));
  for (int i = 0; i < 16; ++i) {
    std::vector<int> u = t;
    u[static_cast<size_t>(i)] ^= 1;
    EXPECT_NE(h, hash_block_tokens(kRootBlockHash, u.data(), 16)) << "token " << i;
  }
  std::vector<int> swapped = t;
  std::swap(swapped[3], swapped[4]);
  EXPECT_NE(h, hash_block_tokens(kRootBlockHash, swapped.data(), 16));
}

}  // namespace
}  // namespace llmwb
