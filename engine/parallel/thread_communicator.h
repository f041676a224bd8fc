// thread_communicator.h — the in-process Communicator: ranks are threads of one process sharing
// memory (for the GUI, the tests and machines without MPI). A ThreadGroup holds the shared state;
// each rank's thread uses its own ThreadCommunicator from group.communicator(rank).
//
// all_reduce_sum: each rank publishes its buffer's address, waits at a barrier, sums every rank's
// buffer into a shared scratch over its own slice of the elements (in rank order, so the bits do
// not depend on which thread sums), waits again, copies the result back, and waits a third time so
// that no rank returns (and reuses its buffer) while another still reads it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "parallel/communicator.h"

namespace llmwb {

class ThreadGroup {
 public:
  explicit ThreadGroup(int size);
  ~ThreadGroup();
  int size() const { return size_; }
  // Rank r's communicator (owned by the group; one per rank, used by that rank's thread only).
  Communicator& communicator(int rank);

  // Internals shared by the group's communicators.
  void barrier();                       // throws llmwb::Error once aborted
  void abort(const std::string& why);
  std::vector<const float*> ptrs;       // what each rank published for the current collective
  std::vector<float> scratch;
  // Point-to-point mailboxes: one per (from, to) pair.
  struct Mailbox {
    const float* data = nullptr;
    int64_t n = 0;
    bool full = false, taken = false;
  };
  Mailbox& mailbox(int from, int to) { return boxes_[size_t(from) * size_t(size_) + size_t(to)]; }
  std::mutex mu;
  std::condition_variable cv;
  bool aborted() const { return aborted_; }
  const std::string& abort_reason() const { return why_; }

 private:
  int size_;
  int waiting_ = 0;
  uint64_t generation_ = 0;
  bool aborted_ = false;
  std::string why_;
  std::vector<Mailbox> boxes_;
  std::vector<std::unique_ptr<Communicator>> comms_;
};

}  // namespace llmwb
