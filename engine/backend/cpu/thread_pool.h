// thread_pool.h — a fixed set of worker threads for the CPU backend.
// The calling thread takes part in the work, so ThreadPool(1) runs everything inline.
#pragma once

#include <cstdint>
#include <functional>

namespace llmwb {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);   // n_threads <= 0: hardware concurrency
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // The threads a job runs on: width() (all of them unless set_width lowered it).
  int size() const;
  int capacity() const;   // the threads the pool holds
  // Runs the following jobs on the first `threads` threads only (clamped to 1..capacity()); the
  // others sleep until the width grows again. For a pipeline stage that shares the machine
  // with the other stages only while they overlap. Call it between jobs, not from one.
  void set_width(int threads);
  // Runs fn(ith, nth) once on each of the nth = size() threads and returns when all are done.
  void run(const std::function<void(int ith, int nth)>& fn);
  // Splits [0, n) into contiguous chunks (at least `grain` long) and runs fn(begin, end) on them.
  void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn,
                    int64_t grain = 1);
  // Like parallel_for, for memory-bound loops whose items are independent (a GEMV's rows): each
  // thread starts on the same contiguous share parallel_for would give it and walks it front to
  // back, `chunk` items per fn call (one sequential stream, as a static split reads); a thread
  // that finishes its share early takes chunks off the back of the share with the most left. So a
  // thread that runs slower (a vCPU the host preempts or feeds less bandwidth) no longer holds
  // the others at the barrier. fn(begin, end) gets whole chunks (the last may be short).
  void parallel_for_balanced(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn,
                             int64_t chunk);

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace llmwb
