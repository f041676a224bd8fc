#include "parallel/thread_communicator.h"

#include <algorithm>

#include "llmwb/errors.h"

namespace llmwb {

namespace {

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(ThreadGroup& g, int rank) : g_(g), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return g_.size(); }
  void barrier() override { g_.barrier(); }
  void abort(const char* why) override { g_.abort(why); }

  void all_reduce_sum(float* x, int64_t n) override {
    const int p = g_.size();
    if (p == 1) return;
    if (rank_ == 0 && g_.scratch.size() < size_t(n)) g_.scratch.resize(size_t(n));
    g_.ptrs[size_t(rank_)] = x;
    g_.barrier();
    // This rank's share of the elements, summed over the ranks in rank order.
    const int64_t begin = n * rank_ / p, end = n * (rank_ + 1) / p;
    float* s = g_.scratch.data();
    std::copy(g_.ptrs[0] + begin, g_.ptrs[0] + end, s + begin);
    for (int r = 1; r < p; ++r) {
      const float* y = g_.ptrs[size_t(r)];
      for (int64_t i = begin; i < end; ++i) s[i] += y[i];
    }
    g_.barrier();
    std::copy(s, s + n, x);
    g_.barrier();
  }

  void all_gather(const float* in, int64_t n, float* out) override {
    g_.ptrs[size_t(rank_)] = in;
    g_.barrier();
    for (int r = 0; r < g_.size(); ++r) std::copy(g_.ptrs[size_t(r)], g_.ptrs[size_t(r)] + n, out + int64_t(r) * n);
    g_.barrier();
  }

  void broadcast(float* x, int64_t n, int root) override {
    check_rank(root, "broadcast");
    g_.ptrs[size_t(rank_)] = x;
    g_.barrier();
    if (rank_ != root) std::copy(g_.ptrs[size_t(root)], g_.ptrs[size_t(root)] + n, x);
    g_.barrier();
  }

  void broadcast_bytes(void* data, int64_t bytes, int root) override {
    check_rank(root, "broadcast");
    g_.ptrs[size_t(rank_)] = static_cast<const float*>(data);
    g_.barrier();
    if (rank_ != root) {
      const auto* src = reinterpret_cast<const uint8_t*>(g_.ptrs[size_t(root)]);
      std::copy(src, src + bytes, static_cast<uint8_t*>(data));
    }
    g_.barrier();
  }

  void send(const float* x, int64_t n, int to) override {
    check_rank(to, "send");
    std::unique_lock lock(g_.mu);
    ThreadGroup::Mailbox& box = g_.mailbox(rank_, to);
    g_.cv.wait(lock, [&] { return !box.full || g_.aborted(); });
    throw_if_aborted();
    box.data = x;
    box.n = n;
    box.full = true;
    box.taken = false;
    g_.cv.notify_all();
    g_.cv.wait(lock, [&] { return box.taken || g_.aborted(); });
    box.taken = false;
    throw_if_aborted();
  }

  void recv(float* x, int64_t n, int from) override {
    check_rank(from, "recv");
    std::unique_lock lock(g_.mu);
    ThreadGroup::Mailbox& box = g_.mailbox(from, rank_);
    g_.cv.wait(lock, [&] { return box.full || g_.aborted(); });
    throw_if_aborted();
    if (box.n != n) {
      const std::string what = "rank " + std::to_string(rank_) + " expected " + std::to_string(n) +
                               " floats from rank " + std::to_string(from) + ", got " + std::to_string(box.n);
      lock.unlock();
      g_.abort(what);
      throw Error("recv", what);
    }
    std::copy(box.data, box.data + n, x);
    box.full = false;
    box.taken = true;
    g_.cv.notify_all();
  }

 private:
  void check_rank(int r, const char* op) const {
    if (r < 0 || r >= g_.size())
      throw Error(op, "rank " + std::to_string(r) + " is not in a group of " + std::to_string(g_.size()));
  }
  void throw_if_aborted() const {
    if (g_.aborted()) throw Error("parallel", "another rank failed: " + g_.abort_reason());
  }
  ThreadGroup& g_;
  int rank_;
};

}  // namespace

ThreadGroup::ThreadGroup(int size) : size_(size) {
  if (size < 1) throw Error("ThreadGroup", "size must be >= 1, got " + std::to_string(size));
  ptrs.assign(size_t(size), nullptr);
  boxes_.resize(size_t(size) * size_t(size));
  for (int r = 0; r < size; ++r) comms_.push_back(std::make_unique<ThreadCommunicator>(*this, r));
}

ThreadGroup::~ThreadGroup() = default;

Communicator& ThreadGroup::communicator(int rank) { return *comms_.at(size_t(rank)); }

void ThreadGroup::barrier() {
  std::unique_lock lock(mu);
  if (aborted_) throw Error("parallel", "another rank failed: " + why_);
  const uint64_t gen = generation_;
  if (++waiting_ == size_) {
    waiting_ = 0;
    ++generation_;
    cv.notify_all();
    return;
  }
  cv.wait(lock, [&] { return generation_ != gen || aborted_; });
  if (generation_ == gen) throw Error("parallel", "another rank failed: " + why_);
}

void ThreadGroup::abort(const std::string& why) {
  std::lock_guard lock(mu);
  if (!aborted_) why_ = why;
  aborted_ = true;
  cv.notify_all();
}

}  // namespace llmwb
