// gpu_test.h — helpers of the GPU tests: skipping without a device, device buffers filled from
// host vectors, poisoned outputs, and the error measure the tests share.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cuda/cuda_resources.h"
#include "runner/device_model.h"

namespace llmwb::test {

// Skips the test (reported as skipped by CTest) when no usable CUDA device is present.
#define LLMWB_REQUIRE_GPU()                                                  \
  do {                                                                       \
    const std::string why = ::llmwb::cuda_unavailable_reason();              \
    if (!why.empty()) GTEST_SKIP() << "no GPU: " << why;                     \
  } while (0)

template <class T>
cuda::DeviceBuffer to_device(const std::vector<T>& v) {
  cuda::DeviceBuffer b(sizeof(T) * std::max<size_t>(1, v.size()));
  LLMWB_CUDA(cudaMemcpy(b.as(), v.data(), sizeof(T) * v.size(), cudaMemcpyHostToDevice));
  return b;
}

template <class T>
std::vector<T> to_host(const cuda::DeviceBuffer& b, size_t n) {
  LLMWB_CUDA(cudaDeviceSynchronize());
  std::vector<T> v(n);
  LLMWB_CUDA(cudaMemcpy(v.data(), b.as(), sizeof(T) * n, cudaMemcpyDeviceToHost));
  return v;
}

// A device buffer of n floats filled with NaN (all bytes 0xFF), so unwritten outputs show.
inline cuda::DeviceBuffer poisoned(size_t n_floats) {
  cuda::DeviceBuffer b(sizeof(float) * std::max<size_t>(1, n_floats));
  LLMWB_CUDA(cudaMemset(b.as(), 0xFF, sizeof(float) * n_floats));
  return b;
}

inline std::vector<float> random_floats(size_t n, std::mt19937_64& rng, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// ||out - ref|| / ||ref||, or +inf when out has a NaN / inf anywhere.
template <class A, class B>
double rel_error(const std::vector<A>& out, const std::vector<B>& ref) {
  EXPECT_EQ(out.size(), ref.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < out.size() && i < ref.size(); ++i) {
    if (!std::isfinite(static_cast<double>(out[i]))) return INFINITY;
    const double d = static_cast<double>(out[i]) - static_cast<double>(ref[i]);
    num += d * d;
    den += static_cast<double>(ref[i]) * static_cast<double>(ref[i]);
  }
  return std::sqrt(num / (den > 0 ? den : 1));
}

}  // namespace llmwb::test
