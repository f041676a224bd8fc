// timed_communicator.h — a Communicator that forwards to another and counts what its rank spent
// in communication: seconds (waiting for the other ranks included) and bytes of payload.
#pragma once

#include <chrono>

#include "parallel/communicator.h"

namespace llmwb {

class TimedCommunicator final : public Communicator {
 public:
  explicit TimedCommunicator(Communicator& inner) : c_(inner) {}
  double seconds = 0;
  uint64_t bytes = 0;
  int calls = 0;

  int rank() const override { return c_.rank(); }
  int size() const override { return c_.size(); }
  void barrier() override { timed(0, [&] { c_.barrier(); }); }
  void all_reduce_sum(float* x, int64_t n) override { timed(n, [&] { c_.all_reduce_sum(x, n); }); }
  void all_gather(const float* in, int64_t n, float* out) override { timed(n, [&] { c_.all_gather(in, n, out); }); }
  void broadcast(float* x, int64_t n, int root) override { timed(n, [&] { c_.broadcast(x, n, root); }); }
  void broadcast_bytes(void* d, int64_t b, int root) override { c_.broadcast_bytes(d, b, root); }
  void send(const float* x, int64_t n, int to) override { timed(n, [&] { c_.send(x, n, to); }); }
  void recv(float* x, int64_t n, int from) override { timed(n, [&] { c_.recv(x, n, from); }); }
  void abort(const char* why) override { c_.abort(why); }

 private:
  template <typename F>
  void timed(int64_t n, F f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    bytes += uint64_t(n) * sizeof(float);
    ++calls;
  }
  Communicator& c_;
};

}  // namespace llmwb
