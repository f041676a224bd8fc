// nccl_communicator.h — the DeviceCommunicator on NCCL (the CUDA toolkit's collective library):
// ncclAllReduce / ncclAllGather, ncclSend / ncclRecv each in a group, on the rank's stream. One
// GPU per rank: NCCL refuses two ranks of one communicator on the same device.
//
// libnccl is opened on first use (dlopen), as cuBLAS is (backend/cuda/cublas_loader.h): linked,
// its ~210 MiB would be mapped by every llmwb process, CPU runs included. Built where nccl.h and
// libnccl are found with the real CUDA toolkit (CMake option LLMWB_NCCL; never in the emulation
// build). Every failing call becomes llmwb::Error("nccl", "<call>: <ncclGetErrorString> (<NCCL's
// last error>)").
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nccl.h>

#include "parallel/device_communicator.h"

namespace llmwb {

class NcclCommunicator final : public DeviceCommunicator {
 public:
  // Ranks as threads of this process: one communicator per entry of `devices` (rank i on CUDA
  // device devices[i]; no device twice), made by ncclCommInitAll from the calling thread.
  static std::vector<std::unique_ptr<NcclCommunicator>> init_all(const std::vector<int>& devices);
  // One rank of a group whose ranks each call this (threads or processes) with the same `id`
  // (new_unique_id() on one rank, handed to the others): ncclCommInitRank on `device`. Blocks
  // until all `size` ranks have joined.
  static std::string new_unique_id();
  NcclCommunicator(const std::string& unique_id, int rank, int size, int device);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int device() const { return device_; }
  std::string describe() const override;
  void all_reduce_sum(float* x, int64_t n, cudaStream_t stream) override;
  void all_gather(const float* in, int64_t n, float* out, cudaStream_t stream) override;
  void send(const float* x, int64_t n, int to, cudaStream_t stream) override;
  void recv(float* x, int64_t n, int from, cudaStream_t stream) override;
  // ncclCommAbort: the communicator's queued and running operations end (their streams then
  // report an error); every later call throws.
  void abort(const std::string& why) override;
  // Throws llmwb::Error when NCCL reported an asynchronous error on this communicator (a peer
  // failed, a network error); after a stream synchronization that failed, it says why.
  void check_async_error();

 private:
  NcclCommunicator(ncclComm_t comm, int rank, int size, int device);
  void check_usable(const char* call);
  ncclComm_t comm_ = nullptr;
  int rank_ = 0, size_ = 1, device_ = 0;
  std::atomic<bool> aborted_{false};
  std::mutex mu_;     // guards why_
  std::string why_;
};

// The loaded library's version ("2.28.9"); throws llmwb::Error("nccl", ...) when libnccl cannot
// be opened.
std::string nccl_version();

}  // namespace llmwb
