// communicator.h — the collective operations the parallel runners need (MPI's / NCCL's vocabulary),
// behind one small interface: a rank of a group of size() ranks, numbered 0..size()-1.
//
// Every rank of the group must call each collective, in the same order, with the same n. The
// implementations: ThreadCommunicator (ranks as threads of one process, shared memory).
// MPI and NCCL implementations plug in here (docs/PARALLEL.md).
#pragma once

#include <cstdint>

namespace llmwb {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Returns once every rank of the group has called it.
  virtual void barrier() = 0;
  // x (n floats) := the sum of every rank's x. Every rank gets the same bits: the sum is taken
  // in rank order, whatever rank computes it.
  virtual void all_reduce_sum(float* x, int64_t n) = 0;
  // out (size() * n floats) := rank 0's in, then rank 1's, ...
  virtual void all_gather(const float* in, int64_t n, float* out) = 0;
  // x (n floats) := root's x on every rank.
  virtual void broadcast(float* x, int64_t n, int root) = 0;
  // bytes at data := root's on every rank (the step metadata rank 0 sends its workers).
  virtual void broadcast_bytes(void* data, int64_t bytes, int root) = 0;
  // Point to point: send blocks until the receiver has taken the data; recv blocks until it arrives.
  // Messages from one sender to one receiver arrive in order.
  virtual void send(const float* x, int64_t n, int to) = 0;
  virtual void recv(float* x, int64_t n, int from) = 0;
  // Marks the group failed (a rank hit an error): every rank blocked in, or later entering, a
  // collective throws llmwb::Error instead of waiting for the failed rank forever.
  virtual void abort(const char* why) = 0;
};

}  // namespace llmwb
