// cuda_resources.h — RAII owners of device memory, pinned host memory, streams, events and
// cuBLAS handles. Destructors never throw (a failing cudaFree at exit is ignored); everything
// else goes through LLMWB_CUDA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "backend/cuda/cublas_loader.h"
#include "backend/cuda/cuda_check.h"

namespace llmwb::cuda {

// Untyped device allocation; grow() reallocates (contents lost) when more bytes are needed.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) { grow(bytes); }
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void grow(size_t bytes) {
    if (bytes <= n_) return;
    reset();
    LLMWB_CUDA(cudaMalloc(&p_, bytes));
    n_ = bytes;
  }
  void reset() noexcept {
    if (p_) (void)cudaFree(p_);
    p_ = nullptr;
    n_ = 0;
  }
  size_t bytes() const { return n_; }
  template <class T = void>
  T* as() const { return static_cast<T*>(p_); }

 private:
  void* p_ = nullptr;
  size_t n_ = 0;
};

// Page-locked host memory: asynchronous copies to and from it overlap nothing else but do
// not stage through a driver bounce buffer.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() { reset(); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void grow(size_t bytes) {
    if (bytes <= n_) return;
    reset();
    LLMWB_CUDA(cudaMallocHost(&p_, bytes));
    n_ = bytes;
  }
  void reset() noexcept {
    if (p_) (void)cudaFreeHost(p_);
    p_ = nullptr;
    n_ = 0;
  }
  template <class T = void>
  T* as() const { return static_cast<T*>(p_); }

 private:
  void* p_ = nullptr;
  size_t n_ = 0;
};

class Stream {
 public:
  Stream() { LLMWB_CUDA(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { (void)cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }
  void sync() const { LLMWB_CUDA(cudaStreamSynchronize(s_)); }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event() { LLMWB_CUDA(cudaEventCreate(&e_)); }
  ~Event() { (void)cudaEventDestroy(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }
  void record(cudaStream_t s) { LLMWB_CUDA(cudaEventRecord(e_, s)); }
  // Milliseconds from `start` to this event (both recorded, this one complete).
  float ms_since(const Event& start) const {
    LLMWB_CUDA(cudaEventSynchronize(e_));
    float ms = 0;
    LLMWB_CUDA(cudaEventElapsedTime(&ms, start.e_, e_));
    return ms;
  }

 private:
  cudaEvent_t e_ = nullptr;
};

class CublasHandle {
 public:
  CublasHandle() { LLMWB_CUDA(cublas().create(&h_)); }
  ~CublasHandle() { (void)cublas().destroy(h_); }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
};

// An NVTX range for Nsight Systems (header-only nvtx3; costs a branch when no tool listens).
class NvtxRange {
 public:
  explicit NvtxRange(const char* name);
  ~NvtxRange();
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace llmwb::cuda
