#include "parallel/cuda/host_staged_communicator.h"

#include <utility>

#include "llmwb/errors.h"

namespace llmwb {

HostStagedCommunicator::HostStagedCommunicator(Communicator& host, std::string kind)
    : host_(host), kind_(std::move(kind)) {}

float* HostStagedCommunicator::staging(int64_t floats, cudaStream_t stream) {
  // The previous call's copy back to the device may still be queued: it reads the buffer.
  LLMWB_CUDA(cudaStreamSynchronize(stream));
  const size_t bytes = sizeof(float) * size_t(floats > 0 ? floats : 1);
  if (bytes > pinned_bytes_) {
    pinned_.grow(bytes);
    pinned_bytes_ = bytes;
  }
  return pinned_.as<float>();
}

void HostStagedCommunicator::all_reduce_sum(float* x, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  float* h = staging(n, stream);
  LLMWB_CUDA(cudaMemcpyAsync(h, x, sizeof(float) * size_t(n), cudaMemcpyDeviceToHost, stream));
  LLMWB_CUDA(cudaStreamSynchronize(stream));
  host_.all_reduce_sum(h, n);
  LLMWB_CUDA(cudaMemcpyAsync(x, h, sizeof(float) * size_t(n), cudaMemcpyHostToDevice, stream));
}

void HostStagedCommunicator::all_gather(const float* in, int64_t n, float* out, cudaStream_t stream) {
  if (n <= 0) return;
  const int64_t total = n * size();
  float* h = staging(n + total, stream);   // [own n | gathered size() * n]
  LLMWB_CUDA(cudaMemcpyAsync(h, in, sizeof(float) * size_t(n), cudaMemcpyDeviceToHost, stream));
  LLMWB_CUDA(cudaStreamSynchronize(stream));
  host_.all_gather(h, n, h + n);
  LLMWB_CUDA(cudaMemcpyAsync(out, h + n, sizeof(float) * size_t(total), cudaMemcpyHostToDevice, stream));
}

void HostStagedCommunicator::send(const float* x, int64_t n, int to, cudaStream_t stream) {
  if (to == rank()) throw Error("device communicator", "rank " + std::to_string(to) + " sends to itself");
  if (n <= 0) return;
  float* h = staging(n, stream);
  LLMWB_CUDA(cudaMemcpyAsync(h, x, sizeof(float) * size_t(n), cudaMemcpyDeviceToHost, stream));
  LLMWB_CUDA(cudaStreamSynchronize(stream));
  host_.send(h, n, to);   // returns once the receiver has taken the data
}

void HostStagedCommunicator::recv(float* x, int64_t n, int from, cudaStream_t stream) {
  if (from == rank()) throw Error("device communicator", "rank " + std::to_string(from) + " receives from itself");
  if (n <= 0) return;
  float* h = staging(n, stream);
  host_.recv(h, n, from);
  LLMWB_CUDA(cudaMemcpyAsync(x, h, sizeof(float) * size_t(n), cudaMemcpyHostToDevice, stream));
}

}  // namespace llmwb
