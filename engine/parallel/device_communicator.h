// device_communicator.h — the collectives of the CUDA ranks (cuda_parallel_runner.h), on device
// memory and ordered on a CUDA stream: what Communicator (communicator.h) is for host memory.
//
// Each call is enqueued on `stream` after the work already there, and the work enqueued after it
// sees its result; the host may return before the data has moved. Every rank of the group must
// make the same calls in the same order with the same n. Two implementations:
//   NcclCommunicator (parallel/nccl): NCCL's collectives, one GPU per rank (ranks as threads of
//     one process); built where nccl.h and libnccl are found (LLMWB_NCCL).
//   HostStagedCommunicator (parallel/cuda): the device buffer copied to pinned host memory, a host
//     Communicator's collective (ThreadGroup, MPI), copied back; any number of ranks per device,
//     and every CUDA build (the CPU emulator of tests/cuda_emu too).
// Only CUDA code includes this header.
#pragma once

#include <cstdint>
#include <string>

#include <cuda_runtime_api.h>

namespace llmwb {

class DeviceCommunicator {
 public:
  virtual ~DeviceCommunicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "nccl 2.28.9", "host-staged (threads)"
  virtual std::string describe() const = 0;
  // x (n floats on the device) := the sum of every rank's x.
  virtual void all_reduce_sum(float* x, int64_t n, cudaStream_t stream) = 0;
  // out (size() * n floats) := rank 0's in, then rank 1's, ... (in and out on the device).
  virtual void all_gather(const float* in, int64_t n, float* out, cudaStream_t stream) = 0;
  // Point to point between two ranks of the group; messages from one sender to one receiver
  // arrive in order. A rank must not send to itself.
  virtual void send(const float* x, int64_t n, int to, cudaStream_t stream) = 0;
  virtual void recv(float* x, int64_t n, int from, cudaStream_t stream) = 0;
  // Marks the group failed (a rank hit an error): every rank blocked in, or later entering, a
  // collective gets llmwb::Error (NCCL: ncclCommAbort) instead of waiting for the failed rank.
  // Callable from any thread.
  virtual void abort(const std::string& why) = 0;
};

}  // namespace llmwb
