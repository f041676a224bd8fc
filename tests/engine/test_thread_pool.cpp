// test_thread_pool.cpp — the CPU backend's persistent worker pool.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "backend/cpu/thread_pool.h"

namespace llmwb {
namespace {

TEST(ThreadPool, RunCallsEveryThreadIndexOnce) {
  for (int n : {1, 2, 3, 5}) {
    ThreadPool pool(n);
    ASSERT_EQ(pool.size(), n);
    for (int rep = 0; rep < 50; ++rep) {
      std::vector<std::atomic<int>> calls(static_cast<size_t>(n));
      std::atomic<int> bad_nth{0};
      pool.run([&](int ith, int nth) {
        if (nth != n) bad_nth++;
        calls[static_cast<size_t>(ith)]++;
      });
      EXPECT_EQ(bad_nth.load(), 0);
      for (int i = 0; i < n; ++i) ASSERT_EQ(calls[static_cast<size_t>(i)].load(), 1) << "thread " << i;
    }
  }
}

TEST(ThreadPool, RunUsesDistinctThreadsIncludingTheCaller) {
  ThreadPool pool(3);
  std::mutex m;
  std::set<std::thread::id> ids;
  std::thread::id share0;
  pool.run([&](int ith, int) {
    std::lock_guard<std::mutex> lock(m);
    ids.insert(std::this_thread::get_id());
    if (ith == 0) share0 = std::this_thread::get_id();
  });
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_EQ(share0, std::this_thread::get_id());
}

TEST(ThreadPool, NonPositiveSizeMeansHardwareConcurrency) {
  ThreadPool pool(0);
  EXPECT_EQ(pool.size(), static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

TEST(ThreadPool, ResultsOfAllThreadsAreVisibleAfterRun) {
  ThreadPool pool(4);
  std::vector<int64_t> out(4);
  for (int rep = 0; rep < 1000; ++rep) {
    pool.run([&](int ith, int) { out[static_cast<size_t>(ith)] = rep * 10 + ith; });   // plain writes
    for (int i = 0; i < 4; ++i) ASSERT_EQ(out[static_cast<size_t>(i)], rep * 10 + i);
  }
}

// Runs `loop` (a parallel_for flavour over [0, n) in pieces of `grain`) for a range of n and
// grains; every index must be covered exactly once and every call must pass chunk_ok.
template <typename Loop, typename ChunkOk>
void expect_covers_once(Loop loop, ChunkOk chunk_ok) {
  for (int64_t n : {0, 1, 2, 3, 7, 64, 100, 1001}) {
    for (int64_t grain : {1, 4, 16, 2000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::atomic<int> bad_chunk{0};
      loop(n, grain, [&](int64_t b, int64_t e) {
        if (b >= e || !chunk_ok(n, grain, b, e)) bad_chunk++;
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
      });
      EXPECT_EQ(bad_chunk.load(), 0) << "n=" << n << " grain=" << grain;
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << i;
    }
  }
}

TEST(ThreadPool, ParallelForCoversTheRangeOnceInGrainAlignedChunks) {
  ThreadPool pool(3);
  expect_covers_once(
      [&](int64_t n, int64_t grain, const auto& fn) { pool.parallel_for(n, fn, grain); },
      [](int64_t n, int64_t grain, int64_t b, int64_t e) {
        return b % grain == 0 && (e == n || e % grain == 0) && (e - b >= grain || e == n);
      });
}

TEST(ThreadPool, ParallelForSplitsWorkAcrossThreads) {
  ThreadPool pool(2);
  std::atomic<int> chunks{0};
  pool.parallel_for(1000, [&](int64_t, int64_t) { chunks++; }, 10);
  EXPECT_EQ(chunks.load(), 2);
  chunks = 0;
  pool.parallel_for(15, [&](int64_t, int64_t) { chunks++; }, 10);   // two grains at most
  EXPECT_EQ(chunks.load(), 2);
  chunks = 0;
  pool.parallel_for(9, [&](int64_t, int64_t) { chunks++; }, 10);   // one grain: inline
  EXPECT_EQ(chunks.load(), 1);
}

TEST(ThreadPool, BalancedParallelForCoversTheRangeOnceInWholeChunks) {
  ThreadPool pool(3);
  expect_covers_once(
      [&](int64_t n, int64_t chunk, const auto& fn) { pool.parallel_for_balanced(n, fn, chunk); },
      [](int64_t n, int64_t chunk, int64_t b, int64_t e) {
        // Whole chunks, one per call, except inline (one call for everything).
        return (b == 0 && e == n) || (b % chunk == 0 && (e - b == chunk || e == n));
      });
}

// A thread that is slow (here: sleeps in each of its chunks) has the back of its share taken
// over by the others, each chunk still run exactly once; a fast thread walks its own share
// front to back before it takes anything else.
TEST(ThreadPool, BalancedParallelForHandsASlowThreadsChunksToTheOthers) {
  ThreadPool pool(2);
  constexpr int64_t kChunks = 40;
  std::vector<std::atomic<int>> hits(kChunks);
  std::vector<int> ran_on(kChunks, -1);
  std::mutex m;
  std::vector<int64_t> order_of_fast;
  const std::thread::id caller = std::this_thread::get_id();
  pool.parallel_for_balanced(
      kChunks,
      [&](int64_t b, int64_t e) {
        ASSERT_EQ(e, b + 1);
        const bool slow = std::this_thread::get_id() == caller;
        if (slow) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        hits[static_cast<size_t>(b)]++;
        std::lock_guard<std::mutex> lock(m);
        ran_on[static_cast<size_t>(b)] = slow ? 0 : 1;
        if (!slow) order_of_fast.push_back(b);
      },
      1);
  for (int64_t i = 0; i < kChunks; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << i;
  // The caller (share [0, 20)) sleeps 20 ms a chunk, so the worker ends its own share first, in
  // order, and then takes chunks of the caller's share from the back.
  ASSERT_GE(order_of_fast.size(), 21u);
  for (int64_t i = 0; i < 20; ++i) EXPECT_EQ(order_of_fast[static_cast<size_t>(i)], 20 + i);
  EXPECT_EQ(order_of_fast[20], 19);
  int caller_chunks = 0;
  for (int64_t i = 0; i < kChunks; ++i) caller_chunks += ran_on[static_cast<size_t>(i)] == 0;
  EXPECT_LT(caller_chunks, 20);
}

TEST(ThreadPool, AnExceptionInAWorkerReachesTheCallerAndThePoolStaysUsable) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.run([](int ith, int) {
                 if (ith == 2) throw std::runtime_error("boom");
               }),
               std::runtime_error);
  EXPECT_THROW(pool.run([](int ith, int) {
                 if (ith == 0) throw std::runtime_error("caller share");
               }),
               std::runtime_error);
  std::atomic<int> calls{0};
  pool.run([&](int, int) { calls++; });
  EXPECT_EQ(calls.load(), 3);
}

TEST(ThreadPool, NestedRunExecutesInlineWithoutDeadlock) {
  ThreadPool pool(2);
  std::atomic<int> inner{0};
  pool.run([&](int, int) { pool.run([&](int, int nth) { inner += nth; }); });
  EXPECT_EQ(inner.load(), 2 * 2 * 2);   // 2 outer shares x 2 inner shares, each adding nth = 2
}

TEST(ThreadPool, WorkersWakeUpAfterSleeping) {
  ThreadPool pool(3);
  for (int rep = 0; rep < 5; ++rep) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));   // past the spin phase
    std::atomic<int> calls{0};
    pool.run([&](int, int) { calls++; });
    ASSERT_EQ(calls.load(), 3);
  }
}

TEST(ThreadPool, CallsFromSeveralThreadsAreSerialised) {
  ThreadPool pool(2);
  std::atomic<int> inside{0}, overlap{0}, total{0};
  auto caller = [&] {
    for (int i = 0; i < 300; ++i) {
      pool.run([&](int ith, int) {
        if (ith == 0 && inside.fetch_add(1) != 0) overlap++;
        total++;
        if (ith == 0) inside.fetch_sub(1);
      });
    }
  };
  std::thread a(caller), b(caller);
  a.join();
  b.join();
  EXPECT_EQ(overlap.load(), 0);
  EXPECT_EQ(total.load(), 2 * 300 * 2);
}

// A pipeline stage narrows its pool while the stages overlap and widens it when they run in
// turn: every job runs on exactly the threads of the width in effect, the parked threads take
// no share, and narrowing and widening back to back (even with no job between, even after the
// parked threads fell asleep) never loses a thread.
TEST(ThreadPool, SetWidthRunsJobsOnTheFirstThreadsOnlyAndWidensAgain) {
  ThreadPool pool(4);
  EXPECT_EQ(pool.capacity(), 4);
  const int widths[] = {2, 4, 1, 3, 3, 1, 4, 2, 1, 4};
  for (int rep = 0; rep < 200; ++rep) {
    const int w = widths[rep % 10];
    pool.set_width(w);
    ASSERT_EQ(pool.size(), w);
    if (rep % 7 == 3) continue;   // no job at this width
    if (rep % 50 == 9) std::this_thread::sleep_for(std::chrono::milliseconds(5));   // parked threads asleep
    std::vector<std::atomic<int>> calls(4);
    std::atomic<int> bad_nth{0};
    std::mutex m;
    std::set<std::thread::id> ids;
    pool.run([&](int ith, int nth) {
      if (nth != w) bad_nth++;
      calls[static_cast<size_t>(ith)]++;
      std::lock_guard<std::mutex> lock(m);
      ids.insert(std::this_thread::get_id());
    });
    EXPECT_EQ(bad_nth.load(), 0);
    EXPECT_EQ(ids.size(), static_cast<size_t>(w));
    for (int i = 0; i < 4; ++i) ASSERT_EQ(calls[static_cast<size_t>(i)].load(), i < w ? 1 : 0) << "width " << w;
    std::atomic<int64_t> covered{0};
    pool.parallel_for(1000, [&](int64_t b, int64_t e) { covered += e - b; });
    ASSERT_EQ(covered.load(), 1000);
  }
  pool.set_width(0);   // clamped to one thread
  EXPECT_EQ(pool.size(), 1);
  pool.set_width(99);
  EXPECT_EQ(pool.size(), 4);
  pool.set_width(2);   // destroyed narrowed: the parked threads still join
}

// A decode step dispatches a few hundred jobs per token; each dispatch must be cheap. The
// bound is loose (the test machine is shared), the figure is recorded for comparison.
TEST(ThreadPool, DispatchOfAnEmptyJobTakesMicroseconds) {
  ThreadPool pool(2);
  std::atomic<int64_t> sink{0};
  for (int i = 0; i < 1000; ++i) pool.run([&](int ith, int) { sink += ith; });
  const int reps = 20000;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) pool.run([&](int ith, int) { sink += ith; });
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / reps;
  RecordProperty("dispatch_us", std::to_string(us));
  std::printf("empty run(): %.2f us\n", us);
  EXPECT_EQ(sink.load(), 21000);
  EXPECT_LT(us, 500.0);
}

}  // namespace
}  // namespace llmwb
