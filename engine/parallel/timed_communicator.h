// timed_communicator.h — a Communicator that forwards to another and counts what its rank spent
// in communication: seconds (waiting for the other ranks included) and bytes of payload; with
// a SpanLog attached, it also records each operation as a RankSpan of the rank's step.
#pragma once

#include <chrono>
#include <vector>

#include "llmwb/telemetry.h"
#include "parallel/communicator.h"

namespace llmwb {

// One rank's RankSpans of one step (RankTelemetry::spans), written by the rank's thread: its
// communicators record each operation, and the time between operations while the rank is
// computing (begin_compute .. end_compute) becomes Compute spans. Consecutive compute pieces
// with nothing between them merge, so a layer adds at most two spans per all-reduce.
class SpanLog {
 public:
  using Clock = std::chrono::steady_clock;
  // Starts a step whose spans count from `origin` (shared by every rank of the step).
  void begin_step(Clock::time_point origin) {
    origin_ = origin;
    spans_.clear();
    computing_ = false;
    micro_batch_ = 0;
  }
  void set_micro_batch(int i) { micro_batch_ = i; }
  void begin_compute() {
    computing_ = true;
    since_ = Clock::now();
  }
  void end_compute() {
    if (!computing_) return;
    add(RankSpan::Kind::Compute, since_, Clock::now(), 0);
    computing_ = false;
  }
  // An operation from t0 to t1: closes the compute piece before it, records it, and starts the
  // next compute piece at its end.
  void communication(RankSpan::Kind kind, Clock::time_point t0, Clock::time_point t1, uint64_t bytes) {
    if (computing_) add(RankSpan::Kind::Compute, since_, t0, 0);
    add(kind, t0, t1, bytes);
    since_ = t1;
  }
  const std::vector<RankSpan>& spans() const { return spans_; }
  double seconds(Clock::time_point t) const { return std::chrono::duration<double>(t - origin_).count(); }

 private:
  void add(RankSpan::Kind kind, Clock::time_point t0, Clock::time_point t1, uint64_t bytes) {
    const float b = float(seconds(t0)), e = float(seconds(t1));
    if (kind == RankSpan::Kind::Compute) {
      if (!(e > b)) return;
      RankSpan* last = spans_.empty() ? nullptr : &spans_.back();
      if (last && last->kind == kind && last->micro_batch == micro_batch_ && b - last->end < 2e-6f) {
        last->end = e;
        return;
      }
    }
    spans_.push_back(RankSpan{kind, b, e, micro_batch_, bytes});
  }
  Clock::time_point origin_{}, since_{};
  bool computing_ = false;
  int micro_batch_ = 0;
  std::vector<RankSpan> spans_;
};

class TimedCommunicator final : public Communicator {
 public:
  explicit TimedCommunicator(Communicator& inner) : c_(inner) {}
  double seconds = 0;
  uint64_t bytes = 0;
  int calls = 0;
  double send_seconds = 0, recv_seconds = 0;   // of `seconds`: in send / in recv
  SpanLog* log = nullptr;                      // where the operations go as spans (null: nowhere)

  int rank() const override { return c_.rank(); }
  int size() const override { return c_.size(); }
  void barrier() override { timed(RankSpan::Kind::AllReduce, 0, [&] { c_.barrier(); }); }
  void all_reduce_sum(float* x, int64_t n) override {
    timed(RankSpan::Kind::AllReduce, n, [&] { c_.all_reduce_sum(x, n); });
  }
  void all_gather(const float* in, int64_t n, float* out) override {
    timed(RankSpan::Kind::AllReduce, n, [&] { c_.all_gather(in, n, out); });
  }
  void broadcast(float* x, int64_t n, int root) override {
    timed(RankSpan::Kind::AllReduce, n, [&] { c_.broadcast(x, n, root); });
  }
  void broadcast_bytes(void* d, int64_t b, int root) override { c_.broadcast_bytes(d, b, root); }
  void send(const float* x, int64_t n, int to) override {
    send_seconds += timed(RankSpan::Kind::Send, n, [&] { c_.send(x, n, to); });
  }
  void recv(float* x, int64_t n, int from) override {
    recv_seconds += timed(RankSpan::Kind::Recv, n, [&] { c_.recv(x, n, from); });
  }
  void abort(const char* why) override { c_.abort(why); }

 private:
  template <typename F>
  double timed(RankSpan::Kind kind, int64_t n, F f) {
    const auto t0 = SpanLog::Clock::now();
    f();
    const auto t1 = SpanLog::Clock::now();
    const double s = std::chrono::duration<double>(t1 - t0).count();
    seconds += s;
    bytes += uint64_t(n) * sizeof(float);
    ++calls;
    if (log) log->communication(kind, t0, t1, uint64_t(n) * sizeof(float));
    return s;
  }
  Communicator& c_;
};

}  // namespace llmwb
