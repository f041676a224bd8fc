// thread_pool.cpp — persistent workers with a spin-then-sleep start/finish barrier.
//
// A decode step calls run() a few hundred times per token (every matmul, every attention
// head group), each job lasting tens of microseconds, so dispatch must cost about a
// microsecond: a condition variable round trip (two futex syscalls plus a wake-up) is 10-50x
// too slow. Workers therefore spin on a generation counter for a short while after each
// job and only then sleep on it (C++20 atomic wait = futex). The caller likewise spins on a
// pending-job counter. Sleeping is announced through a counter that the other side reads
// after publishing its change (both seq_cst: the Dekker pattern), so the wake-up syscall is
// skipped whenever nobody sleeps, which is the common case on the hot path.
#include "backend/cpu/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace llmwb {

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// How long an idle thread spins before sleeping. Long enough to cover the gap between two
// matmuls of a forward pass (norms, RoPE and the like run on the caller in between), short
// enough not to burn a core for long once the engine goes idle.
constexpr auto kSpin = std::chrono::microseconds(200);

// Spins until pred() or the spin budget is spent. Returns pred()'s last value. After a few
// microseconds of pure spinning it also yields: when the machine has more runnable threads
// than cores, the thread we wait for may be queued behind us on this very core.
template <typename Pred>
bool spin_until(Pred pred) {
  for (int i = 0; i < 256; ++i) {
    if (pred()) return true;
    cpu_relax();
  }
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (pred()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= deadline) return pred();
    std::this_thread::yield();
  }
}

// The pool whose job the current thread is running, so that a nested run() on the same pool
// executes inline instead of deadlocking.
thread_local const void* t_running_pool = nullptr;

}  // namespace

struct ThreadPool::Impl {
  int n = 1;
  // set_width: jobs run on threads [0, width); the others are parked, each asleep on its own
  // `wake` flag rather than on the job generation. A thread parks right after the job that
  // narrowed the pool (keep: the width that job leaves), having cleared its flag before that
  // job counted as done; growing sets the flags again and records the generation the woken
  // threads resume from, so no wake-up is lost and a woken thread takes every later job.
  alignas(64) std::atomic<int> width{1};
  int job_n = 1, job_keep = 1;
  std::unique_ptr<std::atomic<uint32_t>[]> wake;
  std::atomic<uint32_t> width_generation{0};
  std::vector<std::thread> workers;

  // Job state, written by the caller before bumping `generation`.
  const std::function<void(int, int)>* fn = nullptr;
  bool stop = false;

  alignas(64) std::atomic<uint32_t> generation{0};
  alignas(64) std::atomic<uint32_t> pending{0};      // workers still running this job
  alignas(64) std::atomic<int> sleeping_workers{0};
  std::atomic<int> caller_sleeping{0};

  std::mutex run_mutex;            // serialises run() from different caller threads
  std::mutex error_mutex;
  std::exception_ptr error;

  void record_error() {
    std::lock_guard<std::mutex> lock(error_mutex);
    if (!error) error = std::current_exception();
  }

  void worker_loop(int ith) {
    uint32_t seen = 0;
    for (;;) {
      uint32_t g = generation.load(std::memory_order_acquire);
      if (g == seen) {
        if (!spin_until([&] { return generation.load(std::memory_order_acquire) != seen; })) {
          sleeping_workers.fetch_add(1, std::memory_order_seq_cst);
          while (generation.load(std::memory_order_seq_cst) == seen) generation.wait(seen);
          sleeping_workers.fetch_sub(1, std::memory_order_relaxed);
        }
        g = generation.load(std::memory_order_acquire);
      }
      seen = g;
      if (stop) return;
      t_running_pool = this;
      try {
        (*fn)(ith, job_n);
      } catch (...) {
        record_error();
      }
      t_running_pool = nullptr;
      const bool park = ith >= job_keep;   // read before the job counts as done
      if (park) wake[ith].store(0, std::memory_order_seq_cst);
      if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1 &&
          caller_sleeping.load(std::memory_order_seq_cst)) {
        pending.notify_one();
      }
      if (park) {
        while (wake[ith].load(std::memory_order_seq_cst) == 0) wake[ith].wait(0);
        seen = width_generation.load(std::memory_order_seq_cst);
      }
    }
  }

  void start_job() {
    generation.fetch_add(1, std::memory_order_seq_cst);
    if (sleeping_workers.load(std::memory_order_seq_cst) > 0) generation.notify_all();
  }

  void wait_job() {
    if (!spin_until([&] { return pending.load(std::memory_order_acquire) == 0; })) {
      caller_sleeping.store(1, std::memory_order_seq_cst);
      for (uint32_t p; (p = pending.load(std::memory_order_seq_cst)) != 0;) pending.wait(p);
      caller_sleeping.store(0, std::memory_order_relaxed);
    }
  }
};

ThreadPool::ThreadPool(int n_threads) : impl_(new Impl) {
  if (n_threads <= 0) n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  impl_->n = n_threads;
  impl_->width.store(n_threads);
  impl_->job_n = impl_->job_keep = n_threads;
  impl_->wake.reset(new std::atomic<uint32_t>[static_cast<size_t>(n_threads)]);
  for (int i = 0; i < n_threads; ++i) impl_->wake[static_cast<size_t>(i)].store(1);
  impl_->workers.reserve(static_cast<size_t>(n_threads - 1));
  for (int i = 1; i < n_threads; ++i) {
    impl_->workers.emplace_back([this, i] { impl_->worker_loop(i); });
  }
}

ThreadPool::~ThreadPool() {
  set_width(impl_->n);   // parked threads rejoin, to see `stop`
  impl_->stop = true;
  impl_->start_job();
  for (auto& t : impl_->workers) t.join();
  delete impl_;
}

int ThreadPool::size() const { return impl_->width.load(std::memory_order_relaxed); }

int ThreadPool::capacity() const { return impl_->n; }

void ThreadPool::set_width(int threads) {
  threads = std::clamp(threads, 1, impl_->n);
  std::lock_guard<std::mutex> lock(impl_->run_mutex);
  const int old = impl_->width.load(std::memory_order_relaxed);
  if (threads == old) return;
  if (threads < old) {
    // One empty job on the old width, after which the threads it drops park.
    static const std::function<void(int, int)> nothing = [](int, int) {};
    impl_->fn = &nothing;
    impl_->job_n = old;
    impl_->job_keep = threads;
    impl_->pending.store(static_cast<uint32_t>(old - 1), std::memory_order_relaxed);
    impl_->start_job();
    impl_->wait_job();
    impl_->width.store(threads, std::memory_order_relaxed);
    return;
  }
  impl_->width_generation.store(impl_->generation.load(std::memory_order_seq_cst), std::memory_order_seq_cst);
  for (int i = old; i < threads; ++i) {
    impl_->wake[static_cast<size_t>(i)].store(1, std::memory_order_seq_cst);
    impl_->wake[static_cast<size_t>(i)].notify_one();
  }
  impl_->width.store(threads, std::memory_order_relaxed);
}

void ThreadPool::run(const std::function<void(int ith, int nth)>& fn) {
  const int n = impl_->width.load(std::memory_order_relaxed);
  if (n == 1 || t_running_pool == impl_) {
    // Single thread, or a nested call from inside one of our own jobs: run every share here.
    for (int i = 0; i < n; ++i) fn(i, n);
    return;
  }
  std::lock_guard<std::mutex> lock(impl_->run_mutex);
  impl_->fn = &fn;
  impl_->job_n = impl_->job_keep = n;
  impl_->error = nullptr;
  impl_->pending.store(static_cast<uint32_t>(n - 1), std::memory_order_relaxed);
  impl_->start_job();

  t_running_pool = impl_;
  try {
    fn(0, n);
  } catch (...) {
    impl_->record_error();
  }
  t_running_pool = nullptr;
  impl_->wait_job();
  if (impl_->error) std::rethrow_exception(impl_->error);
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn,
                              int64_t grain) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t max_chunks = (n + grain - 1) / grain;
  const int64_t chunks = std::min<int64_t>(impl_->width.load(std::memory_order_relaxed), max_chunks);
  if (chunks <= 1) {
    fn(0, n);
    return;
  }
  run([&](int ith, int) {
    if (ith >= chunks) return;
    // Equal shares, rounded to whole grains, so that every chunk but the last is aligned.
    const int64_t grains = max_chunks;
    const int64_t g0 = grains * ith / chunks;
    const int64_t g1 = grains * (ith + 1) / chunks;
    const int64_t begin = g0 * grain;
    const int64_t end = std::min(n, g1 * grain);
    if (begin < end) fn(begin, end);
  });
}

void ThreadPool::parallel_for_balanced(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn,
                                       int64_t chunk) {
  if (n <= 0) return;
  chunk = std::max<int64_t>(chunk, 1);
  const int64_t chunks = (n + chunk - 1) / chunk;
  const int nth = static_cast<int>(std::min<int64_t>(impl_->width.load(std::memory_order_relaxed), chunks));
  if (nth <= 1 || t_running_pool == impl_ || chunks >= (int64_t{1} << 31)) {
    fn(0, n);
    return;
  }
  // Share i is chunks [front, back), both in one atomic word (front low, back high) so that the
  // owner taking the front and a thief taking the back can never both take the last chunk.
  struct alignas(64) Share {
    std::atomic<uint64_t> fb;
  };
  constexpr int kMaxShares = 64;
  Share local[kMaxShares];
  std::unique_ptr<Share[]> heap;
  Share* shares = local;
  if (nth > kMaxShares) {
    heap.reset(new Share[static_cast<size_t>(nth)]);
    shares = heap.get();
  }
  for (int i = 0; i < nth; ++i) {
    const uint64_t f = static_cast<uint64_t>(chunks * i / nth), b = static_cast<uint64_t>(chunks * (i + 1) / nth);
    shares[i].fb.store(f | b << 32, std::memory_order_relaxed);
  }
  auto run_chunk = [&](uint64_t c) {
    const int64_t begin = static_cast<int64_t>(c) * chunk;
    fn(begin, std::min(n, begin + chunk));
  };
  run([&](int ith, int) {
    if (ith >= nth) return;
    std::atomic<uint64_t>& own = shares[ith].fb;
    for (uint64_t v = own.load(std::memory_order_relaxed);;) {
      const uint64_t f = v & 0xFFFFFFFFu, b = v >> 32;
      if (f >= b) break;
      if (own.compare_exchange_weak(v, (f + 1) | b << 32, std::memory_order_relaxed)) {
        run_chunk(f);
        v = own.load(std::memory_order_relaxed);
      }
    }
    for (;;) {
      int victim = -1;
      uint64_t most = 0;
      for (int i = 0; i < nth; ++i) {
        const uint64_t v = shares[i].fb.load(std::memory_order_relaxed);
        const uint64_t f = v & 0xFFFFFFFFu, b = v >> 32;
        if (b > f && b - f > most) most = b - f, victim = i;
      }
      if (victim < 0) return;
      std::atomic<uint64_t>& other = shares[victim].fb;
      uint64_t v = other.load(std::memory_order_relaxed);
      const uint64_t f = v & 0xFFFFFFFFu, b = v >> 32;
      if (f < b && other.compare_exchange_strong(v, f | (b - 1) << 32, std::memory_order_relaxed)) run_chunk(b - 1);
    }
  });
}

}  // namespace llmwb
