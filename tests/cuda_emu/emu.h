// emu.h — the CUDA emulator's interface between its parts (tests/cuda_emu).
//
// The emulation build (-DLLMWB_CUDA_EMULATION=ON) compiles kernels/*.cu with the host compiler,
// force-including emu_device.h, and links this emulator in place of the CUDA runtime and
// cuBLAS, so that the whole CUDA backend — kernels, CudaModel, graphs, cuBLAS calls — runs on
// the CPU under the gpu tests, without a GPU. Every CUDA thread is a fiber; a thread block's
// fibers run on the launching OS thread until each reaches a barrier (__syncthreads, a warp
// shuffle, __syncwarp), so barrier and warp semantics are exact, and misuse (a shuffle whose
// mask names an exited lane, threads of a block waiting at different barriers) is reported
// with the kernel's name, block and thread instead of hanging. Streams are queues run at the
// points where CUDA would synchronize, so a missing synchronization shows as a wrong result.
// Test-only: nothing here is linked into the product.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

#include <cuda_runtime_api.h>
#include <vector_types.h>

namespace llmwb::emu {

// What a CUDA thread sees: its indices and the launch's shape.
struct ThreadCtx {
  uint3 thread_idx{};
  uint3 block_idx{};
  dim3 block_dim{};
  dim3 grid_dim{};
  void* dyn_smem = nullptr;
};

// The running fiber's context (valid inside a kernel only).
ThreadCtx& ctx();

void syncthreads();
void syncwarp(unsigned mask);
// Warp shuffle of 8 bytes of payload. xor_mode: source lane = lane ^ arg, else arg.
uint64_t shuffle(unsigned mask, uint64_t bits, int arg, int width, bool xor_mode);

// Enqueues a launch of `body` (run once per CUDA thread) on stream s; checks the launch shape
// and the dynamic shared memory against the kernel's attribute. The error (if any) is also
// what cudaGetLastError() then returns.
cudaError_t launch(const char* name, const void* func, dim3 grid, dim3 block, size_t smem, cudaStream_t s,
                   std::function<void()> body);

// Enqueues host work on stream s (as the runtime's own operations and cuBLAS do): run now when
// the stream is synchronous work's turn, deferred until a synchronization otherwise, recorded
// into the graph while the stream is being captured.
cudaError_t enqueue(cudaStream_t s, std::function<void()> op);

// Sets the sticky error a failed kernel leaves (the next synchronizing call returns it).
void kernel_failed(const char* name, const char* what);

template <class... P>
struct Launcher {
  void (*kernel)(P...);
  const char* name;
  dim3 grid, block;
  size_t smem;
  cudaStream_t stream;

  template <class... A>
  void operator()(A&&... a) const {
    // Arguments are converted to the parameter types and copied now, as a CUDA launch does.
    std::tuple<std::decay_t<P>...> args(std::forward<A>(a)...);
    auto k = kernel;
    (void)launch(name, reinterpret_cast<const void*>(k), grid, block, smem, stream,
                 [k, args]() { std::apply(k, args); });
  }
};

template <class... P>
Launcher<P...> launcher(void (*kernel)(P...), const char* name, dim3 grid, dim3 block, size_t smem,
                        cudaStream_t s) {
  return Launcher<P...>{kernel, name, grid, block, smem, s};
}

// The order in which the emulator runs a block's runnable threads between barriers, and a
// grid's blocks. A GPU promises no order, so a kernel whose result depends on one has a race: a
// thread reading shared or global memory that another thread writes with no barrier between
// (e.g. a missing __syncthreads). The default runs threads in index order, where a read of a
// lower thread's write happens to see it; Reverse shows that race (the read sees the NaN poison
// or a stale value); Shuffle (a seeded permutation per block and per round, with a random half
// of the warps held back each round so that warps drift apart by several warp operations between
// block barriers) shows both directions and a shared buffer reused before every warp has read
// it. Not a race detector: a race whose accesses the chosen orders never reorder stays hidden.
// LLMWB_CUDA_EMU_ORDER=forward|reverse|shuffle (LLMWB_CUDA_EMU_SEED) sets it for a process;
// the gpu tests run the kernels under each (CTest emu_test_cuda_kernels_{reverse,shuffle}).
enum class Schedule { Forward, Reverse, Shuffle };
void set_schedule(Schedule s, uint64_t seed = 1);
Schedule schedule();

// Emulated device: its memory limit (LLMWB_CUDA_EMU_MEMORY_MB, default 1024) and whether an
// address lies in device memory (for the cuBLAS fakes' checks).
bool is_device_range(const void* p, size_t bytes);

}  // namespace llmwb::emu
