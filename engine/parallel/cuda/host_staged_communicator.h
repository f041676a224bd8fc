// host_staged_communicator.h — a DeviceCommunicator over any host Communicator (ThreadGroup,
// MPI): each collective copies the device buffer to pinned host memory, waits for the stream,
// runs the host collective, and enqueues the copy back. Every CUDA build has it (the CPU
// emulator of tests/cuda_emu too), any number of ranks may share a device, and it is the
// fallback where NCCL is not built. It synchronizes the stream at every call: a pass over it
// cannot be captured into a CUDA graph.
#pragma once

#include "backend/cuda/cuda_resources.h"
#include "parallel/communicator.h"
#include "parallel/device_communicator.h"

namespace llmwb {

class HostStagedCommunicator final : public DeviceCommunicator {
 public:
  // `host` (not owned) is this rank's communicator; `kind` names it in describe() ("threads").
  // A rank uses one stream for all its calls.
  HostStagedCommunicator(Communicator& host, std::string kind);
  int rank() const override { return host_.rank(); }
  int size() const override { return host_.size(); }
  std::string describe() const override { return "host-staged (" + kind_ + ")"; }
  void all_reduce_sum(float* x, int64_t n, cudaStream_t stream) override;
  void all_gather(const float* in, int64_t n, float* out, cudaStream_t stream) override;
  void send(const float* x, int64_t n, int to, cudaStream_t stream) override;
  void recv(float* x, int64_t n, int from, cudaStream_t stream) override;
  void abort(const std::string& why) override { host_.abort(why.c_str()); }

 private:
  // The staging buffer, at least `floats` long, once the stream's earlier copies out of it ran.
  float* staging(int64_t floats, cudaStream_t stream);
  Communicator& host_;
  std::string kind_;
  cuda::PinnedBuffer pinned_;
  size_t pinned_bytes_ = 0;
};

}  // namespace llmwb
