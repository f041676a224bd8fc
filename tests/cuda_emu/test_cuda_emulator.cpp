// test_cuda_emulator.cpp — the CUDA emulator (tests/cuda_emu) keeps CUDA's semantics and reports
// misuse: exact shuffles and barriers, garbage (NaN) in unwritten shared and device memory,
// divergent barriers and shuffles naming exited lanes reported instead of hanging, reads past an
// allocation stopped with the kernel's name, stream work that runs only when waited for, graph
// capture that refuses what CUDA refuses, cuBLAS's column-major conventions, and the schedule
// orders that expose races (a missing barrier, blocks that depend on each other). Built with the
// kernels' force-included header (emu_device.h), so the kernels below are CUDA source.
#include <gtest/gtest.h>
#include <cublas_v2.h>

#include <cmath>
#include <vector>

#include "emu.h"
#include "launch.cuh"

namespace {

__global__ void block_sum_kernel(const float* x, int n, float* out) {
  __shared__ float part[32];
  float v = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) v += x[i];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0.0f;
    for (unsigned w = 0; w < blockDim.x / 32; ++w) t += part[w];
    out[blockIdx.x] = t;
  }
}

__global__ void rotate_kernel(int* out) {
  // __shfl_sync from lane (l + 1) % 32 and __shfl_xor_sync with 5.
  const int lane = threadIdx.x % 32;
  out[threadIdx.x] = __shfl_sync(0xffffffffu, lane * 10, (lane + 1) % 32) + __shfl_xor_sync(0xffffffffu, lane, 5) * 1000;
}

__global__ void read_unwritten_shared_kernel(float* out) {
  LLMWB_DYNAMIC_SHARED(float, buf);
  if (threadIdx.x == 0) buf[0] = 1.0f;
  __syncthreads();
  out[threadIdx.x] = buf[threadIdx.x];   // only buf[0] was written
}

// A race: thread i reads what thread i - 1 wrote to shared memory with no barrier between.
__global__ void missing_barrier_kernel(float* out) {
  LLMWB_DYNAMIC_SHARED(float, buf);
  buf[threadIdx.x] = float(threadIdx.x);
  // __syncthreads() belongs here
  out[threadIdx.x] = threadIdx.x > 0 ? buf[threadIdx.x - 1] : 0.0f;
}

// Blocks that rely on running in order: each adds to what the block before it left.
__global__ void ordered_blocks_kernel(float* acc) {
  if (threadIdx.x == 0) acc[blockIdx.x + 1] = acc[blockIdx.x] + 1.0f;
}

__global__ void divergent_kernel(float* out) {
  if (threadIdx.x % 2)
    __syncthreads();
  else
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 2);
}

__global__ void exited_lane_kernel(float* out) {
  if (threadIdx.x == 7) return;
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
}

__global__ void read_past_end_kernel(const float* x, int n, float* out) {
  out[0] = x[n + 64];   // past the allocation's end (rounded up to 256 bytes)
}

__global__ void fill_kernel(float* y, int n, float v) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = v;
}

__global__ void add_one_kernel(float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += 1.0f;
}

template <class T>
T* device_alloc(size_t n) {
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, sizeof(T) * n), cudaSuccess);
  return static_cast<T*>(p);
}

template <class T>
std::vector<T> download(const T* d, size_t n) {
  std::vector<T> h(n);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(h.data(), d, sizeof(T) * n, cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

TEST(CudaEmulator, ShufflesAndBarriersGiveExactReductions) {
  const int n = 10000;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[size_t(i)] = float(i % 97);
  float* dx = device_alloc<float>(n);
  float* dy = device_alloc<float>(3);
  ASSERT_EQ(cudaMemcpy(dx, x.data(), sizeof(float) * n, cudaMemcpyHostToDevice), cudaSuccess);
  LLMWB_LAUNCH(3, 256, 0, nullptr, block_sum_kernel)(dx, n, dy);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  const auto y = download(dy, 3);
  double total = 0;
  for (float v : x) total += v;
  EXPECT_EQ(double(y[0]) + y[1] + y[2], total);   // integers: exact in any order

  int* dr = device_alloc<int>(64);
  LLMWB_LAUNCH(1, 64, 0, nullptr, rotate_kernel)(dr);
  const auto r = download(dr, 64);
  for (int t = 0; t < 64; ++t) {
    const int lane = t % 32;
    EXPECT_EQ(r[size_t(t)], (lane + 1) % 32 * 10 + (lane ^ 5) * 1000) << "thread " << t;
  }
  cudaFree(dx), cudaFree(dy), cudaFree(dr);
}

TEST(CudaEmulator, UnwrittenSharedAndDeviceMemoryReadAsNaN) {
  float* out = device_alloc<float>(64);
  const auto fresh = download(out, 64);
  EXPECT_TRUE(std::isnan(fresh[0])) << "cudaMalloc'd memory holds garbage (NaN here)";
  LLMWB_LAUNCH(1, 64, 64 * sizeof(float), nullptr, read_unwritten_shared_kernel)(out);
  const auto v = download(out, 64);
  EXPECT_EQ(v[0], 1.0f);
  for (int i = 1; i < 64; ++i) EXPECT_TRUE(std::isnan(v[size_t(i)])) << i;
  cudaFree(out);
}

TEST(CudaEmulator, LaunchShapesAndSharedMemoryAreChecked) {
  float* out = device_alloc<float>(64);
  LLMWB_LAUNCH(1, 2048, 0, nullptr, fill_kernel)(out, 64, 1.0f);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  LLMWB_LAUNCH(1, 64, 100 * 1024, nullptr, read_unwritten_shared_kernel)(out);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue) << "over 48 KiB needs cudaFuncSetAttribute";
  ASSERT_EQ(cudaFuncSetAttribute(read_unwritten_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 100 * 1024),
            cudaSuccess);
  LLMWB_LAUNCH(1, 64, 100 * 1024, nullptr, read_unwritten_shared_kernel)(out);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(download(out, 1)[0], 1.0f);
  cudaFree(out);
}

// The schedule orders: index order happens to hide a missing barrier (each read comes after the
// lower thread's write) and a dependence between blocks; reverse and shuffled orders expose both
// (the reads see the NaN poison, or a block runs before the one it depends on), so the kernels'
// tests run under them too.
TEST(CudaEmulator, ReverseAndShuffledOrdersExposeRaces) {
  const llmwb::emu::Schedule before = llmwb::emu::schedule();
  float* out = device_alloc<float>(64);
  float* acc = device_alloc<float>(9);
  auto race_hidden = [&] {
    LLMWB_LAUNCH(1, 64, 64 * sizeof(float), nullptr, missing_barrier_kernel)(out);
    const auto v = download(out, 64);
    for (int i = 1; i < 64; ++i)
      if (v[size_t(i)] != float(i - 1)) return false;
    return true;
  };
  auto blocks_in_order = [&] {
    EXPECT_EQ(cudaMemset(acc, 0, sizeof(float) * 9), cudaSuccess);
    LLMWB_LAUNCH(8, 32, 0, nullptr, ordered_blocks_kernel)(acc);
    return download(acc, 9)[8] == 8.0f;
  };
  llmwb::emu::set_schedule(llmwb::emu::Schedule::Forward);
  EXPECT_TRUE(race_hidden());
  EXPECT_TRUE(blocks_in_order());
  llmwb::emu::set_schedule(llmwb::emu::Schedule::Reverse);
  EXPECT_FALSE(race_hidden());
  EXPECT_FALSE(blocks_in_order());
  llmwb::emu::set_schedule(llmwb::emu::Schedule::Shuffle, 7);
  EXPECT_FALSE(race_hidden());
  EXPECT_FALSE(blocks_in_order());
  // A correct kernel gives the same answer in every order.
  for (auto s : {llmwb::emu::Schedule::Forward, llmwb::emu::Schedule::Reverse, llmwb::emu::Schedule::Shuffle}) {
    llmwb::emu::set_schedule(s, 3);
    std::vector<float> x(5000);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 13);
    float* dx = device_alloc<float>(x.size());
    float* dy = device_alloc<float>(4);
    ASSERT_EQ(cudaMemcpy(dx, x.data(), sizeof(float) * x.size(), cudaMemcpyHostToDevice), cudaSuccess);
    LLMWB_LAUNCH(4, 128, 0, nullptr, block_sum_kernel)(dx, int(x.size()), dy);
    const auto y = download(dy, 4);
    double total = 0;
    for (float v : x) total += v;
    EXPECT_EQ(double(y[0]) + y[1] + y[2] + y[3], total);   // integers: exact in any order
    cudaFree(dx), cudaFree(dy);
  }
  llmwb::emu::set_schedule(before);
  cudaFree(out), cudaFree(acc);
}

// A failed kernel leaves a sticky error, so these run in a child process.
TEST(CudaEmulatorDeathTest, DivergentBarriersAreReportedNotHung) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        float* out = device_alloc<float>(64);
        LLMWB_LAUNCH(1, 64, 0, nullptr, divergent_kernel)(out);
        std::exit(cudaDeviceSynchronize() == cudaErrorLaunchFailure ? 3 : 4);
      },
      testing::ExitedWithCode(3), "kernel divergent_kernel failed: deadlock.*__syncthreads");
}

TEST(CudaEmulatorDeathTest, AShuffleNamingAnExitedLaneIsReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        float* out = device_alloc<float>(32);
        LLMWB_LAUNCH(1, 32, 0, nullptr, exited_lane_kernel)(out);
        std::exit(cudaDeviceSynchronize() == cudaErrorLaunchFailure ? 3 : 4);
      },
      testing::ExitedWithCode(3), "exited_lane_kernel failed: .*names lane 7, which has exited");
}

TEST(CudaEmulatorDeathTest, AReadPastAnAllocationStopsWithTheKernelsName) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        float* x = device_alloc<float>(1000);
        float* out = device_alloc<float>(1);
        LLMWB_LAUNCH(1, 1, 0, nullptr, read_past_end_kernel)(x, 1000, out);
        (void)cudaDeviceSynchronize();
      },
#if defined(__SANITIZE_ADDRESS__)
      // Under AddressSanitizer device memory is its heap: the first byte past the end is caught.
      "heap-buffer-overflow");
#else
      "invalid memory access at address .* in kernel read_past_end_kernel \\(block \\(0,0,0\\) thread \\(0,0,0\\)\\)");
#endif
}

TEST(CudaEmulator, StreamWorkRunsOnlyWhenWaitedFor) {
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  float* y = device_alloc<float>(256);
  LLMWB_LAUNCH(1, 256, 0, s, fill_kernel)(y, 256, 2.0f);
  float h = 0;
  // A synchronous copy on the legacy stream does not wait for a non-blocking stream.
  ASSERT_EQ(cudaMemcpy(&h, y, sizeof h, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_TRUE(std::isnan(h)) << "the fill ran before anything waited for it";
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(&h, y, sizeof h, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(h, 2.0f);

  // Pageable sources are read at the call, pinned ones when the copy runs.
  std::vector<float> pageable(256, 5.0f);
  ASSERT_EQ(cudaMemcpyAsync(y, pageable.data(), sizeof(float) * 256, cudaMemcpyHostToDevice, s), cudaSuccess);
  pageable.assign(256, 6.0f);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(download(y, 1)[0], 5.0f);
  float* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned), sizeof(float) * 256), cudaSuccess);
  for (int i = 0; i < 256; ++i) pinned[i] = 7.0f;
  ASSERT_EQ(cudaMemcpyAsync(y, pinned, sizeof(float) * 256, cudaMemcpyHostToDevice, s), cudaSuccess);
  for (int i = 0; i < 256; ++i) pinned[i] = 8.0f;   // a race on a GPU: the copy sees 8 here
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(download(y, 1)[0], 8.0f);
  cudaFreeHost(pinned);
  cudaFree(y);
  cudaStreamDestroy(s);
}

TEST(CudaEmulator, GraphCaptureRecordsAndRefusesWhatCudaRefuses) {
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  float* y = device_alloc<float>(100);
  LLMWB_LAUNCH(1, 128, 0, s, fill_kernel)(y, 100, 0.0f);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);

  cudaGraph_t g = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  LLMWB_LAUNCH(1, 128, 0, s, add_one_kernel)(y, 100);
  ASSERT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  EXPECT_EQ(download(y, 1)[0], 0.0f) << "captured work does not run";
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(download(y, 100)[99], 2.0f);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);

  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, 64), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(g, nullptr);
  (void)cudaGetLastError();
  cudaFree(y);
  cudaStreamDestroy(s);
}

TEST(CudaEmulator, CublasGemmIsColumnMajorWithTransposesAndChecksLeadingDimensions) {
  cublasHandle_t h = nullptr;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  // C (2x3) = A^T (2x4) B (4x3); A stored column-major 4x2, B 4x3.
  const int m = 2, n = 3, k = 4;
  std::vector<float> a(size_t(k) * m), b(size_t(k) * n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i + 1);
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(2 * i) - 5.0f;
  float *da = device_alloc<float>(a.size()), *db = device_alloc<float>(b.size()), *dc = device_alloc<float>(size_t(m) * n);
  cudaMemcpy(da, a.data(), sizeof(float) * a.size(), cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), sizeof(float) * b.size(), cudaMemcpyHostToDevice);
  const float one = 1.0f, zero = 0.0f;
  ASSERT_EQ(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, da, k, db, k, &zero, dc, m), CUBLAS_STATUS_SUCCESS);
  const auto c = download(dc, size_t(m) * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float ref = 0;
      for (int p = 0; p < k; ++p) ref += a[size_t(p + i * k)] * b[size_t(p + j * k)];
      EXPECT_EQ(c[size_t(i + j * m)], ref) << i << "," << j;
    }
  EXPECT_EQ(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, da, k - 1, db, k, &zero, dc, m),
            CUBLAS_STATUS_INVALID_VALUE)
      << "lda below the stored rows";
  std::vector<float> host_c(size_t(m) * n);
  EXPECT_EQ(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, da, k, db, k, &zero, host_c.data(), m),
            CUBLAS_STATUS_EXECUTION_FAILED)
      << "an operand in host memory";
  cudaFree(da), cudaFree(db), cudaFree(dc);
  cublasDestroy(h);
}

}  // namespace
