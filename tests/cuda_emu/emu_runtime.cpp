// emu_runtime.cpp — the CUDA runtime API functions the backend and its tests call, on the CPU.
//
// Device memory: each cudaMalloc is its own mapping whose end (rounded up to 256 bytes) touches
// an inaccessible page, and is filled with 0xFF bytes (NaN floats) as a GPU leaves garbage; a
// kernel that reads past an allocation's end stops with SIGSEGV naming the kernel and thread.
// Streams: an operation on a stream created by the program is queued and runs only when
// something waits for it (cudaStreamSynchronize, cudaEventSynchronize, cudaDeviceSynchronize,
// cudaFree), so work whose result is read without such a wait reads stale memory, as it could
// on a GPU. Operations on the legacy default stream run at once (after the blocking streams'
// queued work). Graph capture records the stream's operations; a launch of the graph replays
// them. Calls that CUDA refuses during capture (cudaMalloc, synchronous copies, ...) invalidate
// it here too. cudaMemcpyAsync from pageable host memory reads it at the call, from pinned
// memory (cudaMallocHost) when the copy runs.
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#include "emu.h"
#include "emu_internal.h"

// The runtime's opaque handle types, defined by the emulator.
struct CUstream_st {
  std::deque<std::function<void()>> queue;
  bool blocking = true;
  bool capturing = false;
  bool capture_invalid = false;
  std::vector<std::function<void()>> captured;
};
struct CUevent_st {
  cudaStream_t stream = nullptr;
  bool recorded = false, done = false;
  std::chrono::steady_clock::time_point at;
};
struct CUgraph_st {
  std::vector<std::function<void()>> nodes;
};
struct CUgraphExec_st {
  std::vector<std::function<void()>> nodes;
};

namespace llmwb::emu {
namespace {

struct Alloc {
  char* map = nullptr;   // the whole mapping
  size_t map_bytes = 0;
  char* ptr = nullptr;   // what cudaMalloc returned
  size_t bytes = 0;
};

struct State {
  std::recursive_mutex mu;
  CUstream_st legacy;
  std::vector<CUstream_st*> streams;              // created by the program
  std::map<uintptr_t, Alloc> allocs;              // by ptr
  std::map<uintptr_t, size_t> pinned;             // cudaMallocHost ranges
  std::map<const void*, int> max_dyn_smem;        // cudaFuncSetAttribute
  size_t total = 0, used = 0;
  cudaError_t last = cudaSuccess;                 // cudaGetLastError
  cudaError_t sticky = cudaSuccess;               // a failed kernel
  int capturing = 0;                              // streams in capture
  std::string running;                            // the kernel being run (for the SIGSEGV report)
};

State& st() {
  static State* s = [] {
    auto* n = new State;   // never destroyed: streams may be destroyed by static destructors
    const char* mb = std::getenv("LLMWB_CUDA_EMU_MEMORY_MB");
    n->total = size_t(mb ? std::max(1L, std::atol(mb)) : 1024) << 20;
    return n;
  }();
  return *s;
}

[[maybe_unused]] size_t page() { return size_t(::getpagesize()); }

CUstream_st* resolve(cudaStream_t s) {
  const auto v = reinterpret_cast<uintptr_t>(s);
  if (v == 0 || v == 1 || v == 2) return &st().legacy;   // 0, cudaStreamLegacy, cudaStreamPerThread
  return s;
}
bool is_legacy(cudaStream_t s) { return resolve(s) == &st().legacy; }

cudaError_t set_last(cudaError_t e) {
  if (e != cudaSuccess) st().last = e;
  return e;
}

void flush(CUstream_st* q) {
  while (!q->queue.empty()) {
    auto op = std::move(q->queue.front());
    q->queue.pop_front();
    op();
  }
}

void flush_blocking() {
  State& S = st();
  for (CUstream_st* q : S.streams)
    if (q->blocking) flush(q);
}

void flush_all() {
  State& S = st();
  flush(&S.legacy);
  for (CUstream_st* q : S.streams) flush(q);
}

// CUDA refuses these calls while a stream is being captured (this emulator does not track which
// thread began the capture: the backend captures and calls from one thread).
cudaError_t refuse_in_capture() {
  State& S = st();
  if (S.capturing == 0) return cudaSuccess;
  for (CUstream_st* q : S.streams)
    if (q->capturing) q->capture_invalid = true;
  return set_last(cudaErrorStreamCaptureUnsupported);
}

const Alloc* find_alloc(const void* p) {
  State& S = st();
  const auto v = reinterpret_cast<uintptr_t>(p);
  auto it = S.allocs.upper_bound(v);
  if (it == S.allocs.begin()) return nullptr;
  --it;
  const Alloc& a = it->second;
  return v < reinterpret_cast<uintptr_t>(a.ptr) + a.bytes ? &a : nullptr;
}

bool in_pinned(const void* p, size_t n) {
  State& S = st();
  const auto v = reinterpret_cast<uintptr_t>(p);
  auto it = S.pinned.upper_bound(v);
  if (it == S.pinned.begin()) return false;
  --it;
  return v + n <= it->first + it->second;
}

// The device side of a copy must lie inside one allocation.
bool device_ok(const void* p, size_t n) {
  if (n == 0) return true;
  const Alloc* a = find_alloc(p);
  return a && reinterpret_cast<uintptr_t>(p) + n <= reinterpret_cast<uintptr_t>(a->ptr) + a->bytes;
}

bool copy_ok(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  switch (kind) {
    case cudaMemcpyHostToDevice: return device_ok(dst, n);
    case cudaMemcpyDeviceToHost: return device_ok(src, n);
    case cudaMemcpyDeviceToDevice: return device_ok(dst, n) && device_ok(src, n);
    case cudaMemcpyHostToHost: return true;
    case cudaMemcpyDefault: return true;
  }
  return false;
}

void on_segv(int sig, siginfo_t* info, void*) {
  State& S = st();
  char buf[512];
  const int n = std::snprintf(buf, sizeof buf,
                              "llmwb cuda emulator: %s at address %p%s%s%s\n",
                              sig == SIGSEGV ? "invalid memory access" : "bus error", info->si_addr,
                              S.running.empty() ? " outside any kernel" : " in kernel ", S.running.c_str(),
                              detail::current_thread().c_str());
  if (n > 0) (void)!::write(2, buf, size_t(std::min(n, int(sizeof buf) - 1)));
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void install_segv_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa{};
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    ::sigaction(SIGSEGV, &sa, nullptr);
    ::sigaction(SIGBUS, &sa, nullptr);
  });
}

}  // namespace

bool is_device_range(const void* p, size_t bytes) {
  std::lock_guard lock(st().mu);
  return device_ok(p, bytes);
}

void kernel_failed(const char* name, const char* what) {
  std::fprintf(stderr, "llmwb cuda emulator: kernel %s failed: %s\n", name, what);
  st().sticky = cudaErrorLaunchFailure;
}

cudaError_t enqueue(cudaStream_t s, std::function<void()> op) {
  State& S = st();
  std::lock_guard lock(S.mu);
  CUstream_st* q = resolve(s);
  if (q->capturing) {
    q->captured.push_back(std::move(op));
    return cudaSuccess;
  }
  if (q == &S.legacy) {
    flush_blocking();
    op();
  } else {
    q->queue.push_back(std::move(op));
  }
  return cudaSuccess;
}

cudaError_t launch(const char* name, const void* func, dim3 grid, dim3 block, size_t smem, cudaStream_t s,
                   std::function<void()> body) {
  State& S = st();
  std::lock_guard lock(S.mu);
  install_segv_handler();
  const uint64_t threads = uint64_t(block.x) * block.y * block.z;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || threads == 0 || threads > 1024 || block.z > 64 ||
      grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535) {
    std::fprintf(stderr, "llmwb cuda emulator: launch of %s with grid (%u,%u,%u) block (%u,%u,%u): invalid configuration\n",
                 name, grid.x, grid.y, grid.z, block.x, block.y, block.z);
    return set_last(cudaErrorInvalidConfiguration);
  }
  int limit = 48 * 1024;
  if (auto it = S.max_dyn_smem.find(func); it != S.max_dyn_smem.end()) limit = std::max(limit, it->second);
  if (smem > size_t(limit)) {
    std::fprintf(stderr, "llmwb cuda emulator: launch of %s asks %zu bytes of dynamic shared memory, %d allowed\n", name,
                 smem, limit);
    return set_last(cudaErrorInvalidValue);
  }
  auto run = std::make_shared<detail::KernelRun>(detail::KernelRun{name, grid, block, smem, std::move(body)});
  return enqueue(s, [run] {
    State& S2 = st();
    if (S2.sticky != cudaSuccess) return;   // a failed context runs nothing more
    S2.running = run->name;
    std::string why;
    const bool ok = detail::run_grid(*run, why);
    S2.running.clear();
    if (!ok) kernel_failed(run->name.c_str(), why.c_str());
  });
}

}  // namespace llmwb::emu

using llmwb::emu::st;
using namespace llmwb::emu;

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  const char* n = std::getenv("LLMWB_CUDA_EMU_DEVICES");
  *count = n ? std::atoi(n) : 1;
  return *count > 0 ? cudaSuccess : set_last(cudaErrorNoDevice);
}

cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : set_last(cudaErrorInvalidDevice); }

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int device) {
  if (device != 0) return set_last(cudaErrorInvalidDevice);
  *p = cudaDeviceProp{};
  std::snprintf(p->name, sizeof p->name, "llmwb CUDA emulator (H200 shape)");
  p->major = 9;
  p->minor = 0;
  p->multiProcessorCount = 132;
  p->totalGlobalMem = st().total;
  p->sharedMemPerBlock = 48 * 1024;
  p->sharedMemPerBlockOptin = 232448;
  p->sharedMemPerMultiprocessor = 233472;
  p->regsPerBlock = 65536;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsPerMultiProcessor = 2048;
  p->maxThreadsDim[0] = 1024, p->maxThreadsDim[1] = 1024, p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 0x7fffffff, p->maxGridSize[1] = 65535, p->maxGridSize[2] = 65535;
  p->memoryBusWidth = 6144;
  p->l2CacheSize = 50 << 20;
  p->concurrentKernels = 1;
  p->unifiedAddressing = 1;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* v) {
  *v = CUDART_VERSION;
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* v) {
  *v = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
  State& S = st();
  if (S.sticky != cudaSuccess) return S.sticky;
  const cudaError_t e = S.last;
  S.last = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError(void) {
  State& S = st();
  return S.sticky != cudaSuccess ? S.sticky : S.last;
}

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureUnmatched: return "cudaErrorStreamCaptureUnmatched";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    default: return "cudaErrorUnknown";
  }
}

const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorLaunchFailure: return "unspecified launch failure (see the emulator's message above)";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    default: return "emulated CUDA error";
  }
}

cudaError_t cudaMalloc(void** p, size_t bytes) {
  State& S = st();
  std::lock_guard lock(S.mu);
  *p = nullptr;
  if (cudaError_t e = refuse_in_capture(); e != cudaSuccess) return e;
  const size_t rounded = (std::max<size_t>(bytes, 1) + 255) & ~size_t(255);
  if (S.used + rounded > S.total) return set_last(cudaErrorMemoryAllocation);
  Alloc a;
  a.bytes = bytes;
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer's heap: its redzones catch a kernel's access one byte past (or before) the
  // allocation, and its report names the kernel's frames.
  a.ptr = static_cast<char*>(std::aligned_alloc(256, rounded));
  if (!a.ptr) return set_last(cudaErrorMemoryAllocation);
  a.map = a.ptr;
  std::memset(a.ptr, 0xFF, bytes);
  __asan_poison_memory_region(a.ptr + bytes, rounded - bytes);
#else
  const size_t pg = page();
  const size_t body = (rounded + pg - 1) / pg * pg;
  void* m = ::mmap(nullptr, body + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return set_last(cudaErrorMemoryAllocation);
  ::mprotect(static_cast<char*>(m) + body, pg, PROT_NONE);
  a.map = static_cast<char*>(m);
  a.map_bytes = body + pg;
  a.ptr = a.map + (body - rounded);
  std::memset(a.ptr, 0xFF, rounded);
#endif
  S.allocs[reinterpret_cast<uintptr_t>(a.ptr)] = a;
  S.used += rounded;
  *p = a.ptr;
  return cudaSuccess;
}

cudaError_t cudaFree(void* p) {
  State& S = st();
  std::lock_guard lock(S.mu);
  if (!p) return cudaSuccess;
  if (cudaError_t e = refuse_in_capture(); e != cudaSuccess) return e;
  flush_all();   // cudaFree waits for the device
  auto it = S.allocs.find(reinterpret_cast<uintptr_t>(p));
  if (it == S.allocs.end()) return set_last(cudaErrorInvalidValue);
  S.used -= (std::max<size_t>(it->second.bytes, 1) + 255) & ~size_t(255);
#if defined(__SANITIZE_ADDRESS__)
  __asan_unpoison_memory_region(it->second.map, (std::max<size_t>(it->second.bytes, 1) + 255) & ~size_t(255));
  std::free(it->second.map);
#else
  ::munmap(it->second.map, it->second.map_bytes);
#endif
  S.allocs.erase(it);
  return S.sticky;
}

cudaError_t cudaMallocHost(void** p, size_t bytes) {
  State& S = st();
  std::lock_guard lock(S.mu);
  *p = std::aligned_alloc(256, (std::max<size_t>(bytes, 1) + 255) & ~size_t(255));
  if (!*p) return set_last(cudaErrorMemoryAllocation);
  S.pinned[reinterpret_cast<uintptr_t>(*p)] = bytes;
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void* p) {
  State& S = st();
  std::lock_guard lock(S.mu);
  if (!p) return cudaSuccess;
  if (cudaError_t e = refuse_in_capture(); e != cudaSuccess) return e;
  flush_all();
  if (S.pinned.erase(reinterpret_cast<uintptr_t>(p)) == 0) return set_last(cudaErrorInvalidValue);
  std::free(p);
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_b, size_t* total) {
  State& S = st();
  std::lock_guard lock(S.mu);
  *free_b = S.total - S.used;
  *total = S.total;
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  State& S = st();
  std::lock_guard lock(S.mu);
  if (cudaError_t e = refuse_in_capture(); e != cudaSuccess) return e;
  if (!copy_ok(dst, src, n, kind)) return set_last(cudaErrorInvalidValue);
  flush(&S.legacy);
  flush_blocking();
  if (S.sticky != cudaSuccess) return S.sticky;
  if (n) std::memmove(dst, src, n);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s) {
  State& S = st();
  std::lock_guard lock(S.mu);
  if (!copy_ok(dst, src, n, kind)) return set_last(cudaErrorInvalidValue);
  CUstream_st* q = resolve(s);
  if (n == 0) return cudaSuccess;
  if (kind == cudaMemcpyHostToDevice && !in_pinned(src, n)) {
    if (q->capturing) {   // a graph cannot hold a copy from pageable memory
      q->capture_invalid = true;
      return set_last(cudaErrorStreamCaptureUnsupported);
    }
    // Pageable source: read now (CUDA stages it before returning).
    auto copy = std::make_shared<std::vector<char>>(static_cast<const char*>(src), static_cast<const char*>(src) + n);
    return enqueue(s, [dst, copy] { std::memcpy(dst, copy->data(), copy->size()); });
  }
  if (kind == cudaMemcpyDeviceToHost && !in_pinned(dst, n)) {
    if (q->capturing) {
      q->capture_invalid = true;
      return set_last(cudaErrorStreamCaptureUnsupported);
    }
    // Pageable destination: CUDA returns only when the copy is done.
    flush(q);
    if (q == &S.legacy) flush_blocking();
    std::memcpy(dst, src, n);
    return S.sticky;
  }
  return enqueue(s, [dst, src, n] { std::memmove(dst, src, n); });
}

cudaError_t cudaMemset(void* p, int v, size_t n) {
  State& S = st();
  std::lock_guard lock(S.mu);
  if (cudaError_t e = refuse_in_capture(); e != cudaSuccess) return e;
  if (!device_ok(p, n)) return set_last(cudaErrorInvalidValue);
  return enqueue(nullptr, [p, v, n] { std::memset(p, v, n); });
}

cudaError_t cudaDeviceSynchronize(void) {
  State& S = st();
  std::lock_guard lock(S.mu);
  if (cudaError_t e = refuse_in_capture(); e != cudaSuccess) return e;
  flush_all();
  return S.sticky;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  State& S = st();
  std::lock_guard lock(S.mu);
  auto* q = new CUstream_st;
  q->blocking = (flags & cudaStreamNonBlocking) == 0;
  S.streams.push_back(q);
  *s = q;
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* s) { return cudaStreamCreateWithFlags(s, cudaStreamDefault); }

cudaError_t cudaStreamDestroy(cudaStream_t s) {
  State& S = st();
  std::lock_guard lock(S.mu);
  if (is_legacy(s)) return set_last(cudaErrorInvalidResourceHandle);
  auto it = std::find(S.streams.begin(), S.streams.end(), s);
  if (it == S.streams.end()) return set_last(cudaErrorInvalidResourceHandle);
  flush(s);   // queued work still runs
  if (s->capturing) --S.capturing;
  S.streams.erase(it);
  delete s;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  State& S = st();
  std::lock_guard lock(S.mu);
  CUstream_st* q = resolve(s);
  if (q->capturing) {
    q->capture_invalid = true;
    return set_last(cudaErrorStreamCaptureUnsupported);
  }
  if (cudaError_t e = refuse_in_capture(); e != cudaSuccess) return e;
  flush(q);
  if (q == &S.legacy) flush_blocking();
  return S.sticky;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode) {
  State& S = st();
  std::lock_guard lock(S.mu);
  CUstream_st* q = resolve(s);
  if (q == &S.legacy) return set_last(cudaErrorStreamCaptureUnsupported);
  if (q->capturing) return set_last(cudaErrorIllegalState);
  q->capturing = true;
  q->capture_invalid = false;
  q->captured.clear();
  ++S.capturing;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* g) {
  State& S = st();
  std::lock_guard lock(S.mu);
  CUstream_st* q = resolve(s);
  *g = nullptr;
  if (!q->capturing) return set_last(cudaErrorIllegalState);
  q->capturing = false;
  --S.capturing;
  if (q->capture_invalid) {
    q->captured.clear();
    return set_last(cudaErrorStreamCaptureInvalidated);
  }
  auto* graph = new CUgraph_st;
  graph->nodes = std::move(q->captured);
  q->captured.clear();
  *g = graph;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t g, unsigned long long) {
  if (!g) return set_last(cudaErrorInvalidValue);
  auto* e = new CUgraphExec_st;
  e->nodes = g->nodes;
  *exec = e;
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
  if (!exec) return set_last(cudaErrorInvalidValue);
  return enqueue(s, [exec] {
    for (auto& op : exec->nodes) op();
  });
}

cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  delete g;
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) {
  State& S = st();
  std::lock_guard lock(S.mu);
  flush_all();   // a queued launch of it may still be pending
  delete e;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* e) {
  *e = new CUevent_st;
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
  State& S = st();
  std::lock_guard lock(S.mu);
  flush_all();
  delete e;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  e->stream = s;
  e->recorded = true;
  e->done = false;
  return enqueue(s, [e] {
    e->at = std::chrono::steady_clock::now();
    e->done = true;
  });
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  State& S = st();
  std::lock_guard lock(S.mu);
  if (!e->recorded) return cudaSuccess;
  flush(resolve(e->stream));
  return S.sticky;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  if (!a->done || !b->done) return set_last(cudaErrorNotReady);
  *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
  return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  State& S = st();
  std::lock_guard lock(S.mu);
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (value < 0 || value > 232448) return set_last(cudaErrorInvalidValue);
    S.max_dyn_smem[func] = value;
  }
  return cudaSuccess;
}

}  // extern "C"
