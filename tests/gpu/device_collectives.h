// device_collectives.h — the check every DeviceCommunicator (parallel/device_communicator.h)
// passes on device memory: ranks as threads sum, gather and pass a chain of buffers, and the
// values are checked on the host. Used by the NCCL test and the host-staged one.
#pragma once

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "gpu_test.h"
#include "parallel/device_communicator.h"

namespace llmwb::test {

// What the check needs of one implementation: rank r's communicator, what the rank's thread does
// before its first call (cudaSetDevice) and after the first sync (an asynchronous error check),
// and how a failed rank ends the group.
struct DeviceRanks {
  int n_ranks = 0;
  std::function<DeviceCommunicator&(int rank)> comm;
  std::function<void(int rank)> on_thread = [](int) {};
  std::function<void(int rank)> after_sync = [](int) {};
  std::function<void(const std::string& why)> abort;
};

// Rank r holds (r + 1) * (i % 97) at element i of n: every rank's sum is the sum of the ranks'
// numbers times (i % 97) (exact in floats), every gather the ranks' buffers in rank order, and
// the chain 0 -> 1 -> ... (rank 0 starts from zeros, each rank adds its number: what pipeline
// stages do) leaves r (r + 1) / 2 at rank r.
inline void check_device_collectives(const DeviceRanks& ranks, int64_t n) {
  const int n_ranks = ranks.n_ranks;
  std::vector<std::vector<float>> summed(static_cast<size_t>(n_ranks)), gathered(static_cast<size_t>(n_ranks)),
      chained(static_cast<size_t>(n_ranks));
  std::vector<std::string> errors(static_cast<size_t>(n_ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < n_ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        ranks.on_thread(r);
        DeviceCommunicator& c = ranks.comm(r);
        cuda::Stream s;
        std::vector<float> mine(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) mine[size_t(i)] = float(r + 1) * float(i % 97);
        cuda::DeviceBuffer x = to_device(mine), all = poisoned(size_t(n * n_ranks));
        cuda::DeviceBuffer hop =
            r == 0 ? to_device(std::vector<float>(static_cast<size_t>(n), 0.0f)) : poisoned(size_t(n));
        c.all_reduce_sum(x.as<float>(), n, s.get());
        c.all_gather(x.as<float>(), n, all.as<float>(), s.get());
        if (r > 0) c.recv(hop.as<float>(), n, r - 1, s.get());
        s.sync();
        ranks.after_sync(r);
        std::vector<float> h(static_cast<size_t>(n));
        LLMWB_CUDA(cudaMemcpy(h.data(), hop.as(), sizeof(float) * size_t(n), cudaMemcpyDeviceToHost));
        for (float& v : h) v += float(r);
        cuda::DeviceBuffer next = to_device(h);
        if (r < n_ranks - 1) c.send(next.as<float>(), n, r + 1, s.get());
        s.sync();
        summed[size_t(r)] = to_host<float>(x, size_t(n));
        gathered[size_t(r)] = to_host<float>(all, size_t(n * n_ranks));
        chained[size_t(r)] = h;
      } catch (const std::exception& e) {
        errors[size_t(r)] = e.what();
        ranks.abort(e.what());
      }
    });
  for (auto& t : threads) t.join();
  const float ranks_sum = float(n_ranks * (n_ranks + 1) / 2);
  for (int r = 0; r < n_ranks; ++r) {
    ASSERT_EQ(errors[size_t(r)], "") << "rank " << r;
    for (int64_t i = 0; i < n; ++i) {
      const float want = ranks_sum * float(i % 97);
      ASSERT_EQ(summed[size_t(r)][size_t(i)], want) << "rank " << r << " element " << i;
      for (int k = 0; k < n_ranks; ++k)
        ASSERT_EQ(gathered[size_t(r)][size_t(k * n + i)], want) << "rank " << r << " part " << k << " element " << i;
      ASSERT_EQ(chained[size_t(r)][size_t(i)], float(r * (r + 1) / 2)) << "rank " << r << " element " << i;
    }
  }
}

}  // namespace llmwb::test
