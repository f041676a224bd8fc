// emu_exec.cpp — runs an emulated kernel launch: every CUDA thread of a block is a fiber on the
// launching OS thread; a fiber runs until it reaches a barrier, a warp shuffle or its end, and
// the last thread to arrive at a barrier releases the others. Blocks run one after another.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "emu.h"
#include "emu_internal.h"

// Under AddressSanitizer the switches are announced (its fiber interface) and a reused stack's
// shadow is cleared, so ASan follows the fibers and still checks the kernels' memory accesses.
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define LLMWB_EMU_ASAN 1
#else
#define LLMWB_EMU_ASAN 0
#endif

// Saves the callee-saved registers and the stack pointer into *save_sp, then resumes the
// context whose stack pointer is load_sp (x86-64 System V).
extern "C" void llmwb_emu_switch(void** save_sp, void* load_sp);
asm(R"(
  .text
  .globl llmwb_emu_switch
  .hidden llmwb_emu_switch
  .type llmwb_emu_switch, @function
llmwb_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size llmwb_emu_switch, .-llmwb_emu_switch
)");

namespace llmwb::emu {
namespace {

constexpr size_t kStackBytes = size_t(256) << 10;   // per CUDA thread (kernels keep small frames)
constexpr unsigned kFullMask = 0xffffffffu;

enum class Wait : uint8_t { None, Block, Warp };

struct Fiber {
  void* sp = nullptr;   // saved stack pointer while switched out
  char* stack = nullptr;   // its stack's lowest usable byte (kStackBytes)
  void* asan_fake = nullptr;
  ThreadCtx tc;
  Wait wait = Wait::None;
  bool done = false;
  bool shfl = false;    // waiting at a shuffle (else __syncwarp)
  bool xor_mode = false;
  unsigned mask = 0;
  int arg = 0, width = 32;
  uint64_t value = 0, result = 0;
};

struct Worker {
  std::vector<char*> stacks;   // mmap'd, a guard page below each
  std::vector<Fiber> fibers;
  std::vector<int> warp_live, warp_waiting;
  void* sched_sp = nullptr;
  const void* sched_bottom = nullptr;   // the launching thread's stack (ASan's fiber interface)
  size_t sched_size = 0;
  void* sched_fake = nullptr;
  Fiber* cur = nullptr;
  const std::function<void()>* body = nullptr;
  const char* name = "";
  int n = 0, live = 0, block_waiting = 0;
  bool failed = false;
  std::string why;

  ~Worker() {
    for (char* s : stacks) ::munmap(s, kStackBytes + size_t(::getpagesize()));
  }
};

thread_local Worker t_worker;
thread_local bool t_in_kernel = false;

struct ScheduleState {
  Schedule order = Schedule::Forward;
  uint64_t seed = 1;
  ScheduleState() {
    if (const char* e = std::getenv("LLMWB_CUDA_EMU_ORDER")) {
      if (!std::strcmp(e, "reverse")) order = Schedule::Reverse;
      else if (!std::strcmp(e, "shuffle")) order = Schedule::Shuffle;
      else if (std::strcmp(e, "forward") != 0 && *e) {
        std::fprintf(stderr, "llmwb cuda emulator: LLMWB_CUDA_EMU_ORDER=%s is not forward, reverse or shuffle\n", e);
        std::abort();
      }
    }
    if (const char* s = std::getenv("LLMWB_CUDA_EMU_SEED")) seed = std::strtoull(s, nullptr, 10);
  }
};
ScheduleState& schedule_state() {
  static ScheduleState s;
  return s;
}

// 0..n-1 in the schedule's order; `salt` varies a shuffle between blocks and rounds.
void order_indices(std::vector<int>& idx, int n, uint64_t salt) {
  idx.resize(size_t(n));
  std::iota(idx.begin(), idx.end(), 0);
  const ScheduleState& st = schedule_state();
  if (st.order == Schedule::Reverse) {
    std::reverse(idx.begin(), idx.end());
  } else if (st.order == Schedule::Shuffle) {
    std::mt19937_64 rng(st.seed * 0x9E3779B97F4A7C15ull ^ salt);
    std::shuffle(idx.begin(), idx.end(), rng);
  }
}

[[noreturn]] void fiber_main();

void* fresh_stack(char* base) {
  // [guard page][stack ...... top]: the entry "returns" into fiber_main with the stack aligned
  // as after a call.
#if LLMWB_EMU_ASAN
  __asan_unpoison_memory_region(base + ::getpagesize(), kStackBytes);   // a previous fiber's frames
#endif
  auto* top = reinterpret_cast<uintptr_t*>(base + size_t(::getpagesize()) + kStackBytes);
  *--top = 0;                                             // fiber_main's (never used) return address
  *--top = reinterpret_cast<uintptr_t>(&fiber_main);      // popped by `ret`
  for (int i = 0; i < 6; ++i) *--top = 0;                 // rbp rbx r12 r13 r14 r15
  return top;
}

void grow_stacks(Worker& w, int n) {
  const size_t page = size_t(::getpagesize());
  while (static_cast<int>(w.stacks.size()) < n) {
    void* p = ::mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                     -1, 0);
    if (p == MAP_FAILED) {
      std::fprintf(stderr, "llmwb cuda emulator: cannot map a fiber stack\n");
      std::abort();
    }
    ::mprotect(p, page, PROT_NONE);
    w.stacks.push_back(static_cast<char*>(p));
  }
}

std::string where(const Fiber& f) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "block (%u,%u,%u) thread (%u,%u,%u)", f.tc.block_idx.x, f.tc.block_idx.y,
                f.tc.block_idx.z, f.tc.thread_idx.x, f.tc.thread_idx.y, f.tc.thread_idx.z);
  return buf;
}

void fail(Worker& w, const std::string& why) {
  if (!w.failed) {
    w.failed = true;
    w.why = why;
  }
}

// Fiber -> scheduler and back.
void yield(Worker& w) {
  Fiber& f = *w.cur;
#if LLMWB_EMU_ASAN
  __sanitizer_start_switch_fiber(&f.asan_fake, w.sched_bottom, w.sched_size);
#endif
  llmwb_emu_switch(&f.sp, w.sched_sp);
#if LLMWB_EMU_ASAN
  __sanitizer_finish_switch_fiber(f.asan_fake, &w.sched_bottom, &w.sched_size);
#endif
}

// Scheduler -> fiber f until it yields or ends.
void resume(Worker& w, Fiber& f) {
  w.cur = &f;
#if LLMWB_EMU_ASAN
  __sanitizer_start_switch_fiber(&w.sched_fake, f.stack, kStackBytes);
#endif
  llmwb_emu_switch(&w.sched_sp, f.sp);
#if LLMWB_EMU_ASAN
  __sanitizer_finish_switch_fiber(w.sched_fake, nullptr, nullptr);
#endif
}

int linear_id(const Worker& w, const Fiber& f) { return static_cast<int>(&f - w.fibers.data()); }

// The warp's lanes are all at a warp operation (or exited): check that they agree and release them.
void resolve_warp(Worker& w, int warp) {
  const int first = warp * 32, last = std::min(w.n, first + 32);
  Fiber* any = nullptr;
  for (int i = first; i < last; ++i)
    if (!w.fibers[i].done) any = &w.fibers[i];
  if (!any) return;
  const unsigned mask = any->mask;
  for (int i = first; i < last; ++i) {
    const Fiber& f = w.fibers[i];
    const unsigned bit = 1u << (i - first);
    if (f.done) {
      if (mask & bit)
        fail(w, where(*any) + ": a warp operation's mask 0x" + [&] {
          char b[16];
          std::snprintf(b, sizeof b, "%08x", mask);
          return std::string(b);
        }() + " names lane " + std::to_string(i - first) + ", which has exited");
      continue;
    }
    if (f.mask != mask || f.shfl != any->shfl)
      fail(w, where(f) + ": the lanes of a warp are at different warp operations (divergent __shfl/__syncwarp)");
  }
  if (mask != kFullMask && (mask >> (last - first)) != 0 && last - first < 32)
    fail(w, where(*any) + ": a warp operation's mask names lanes past the end of the block");
  if (mask != kFullMask) fail(w, where(*any) + ": partial-warp masks are not emulated");
  if (last - first < 32) fail(w, where(*any) + ": a full-mask warp operation in a warp of " + std::to_string(last - first) + " threads");
  if (w.failed) return;
  for (int i = first; i < last; ++i) {
    Fiber& f = w.fibers[i];
    if (f.shfl) {
      const int lane = i - first, seg = lane / f.width * f.width;
      int src = f.xor_mode ? (lane ^ f.arg) : seg + (f.arg % f.width + f.width) % f.width;
      if (f.xor_mode && (src < seg || src >= seg + f.width)) src = lane;
      f.result = w.fibers[first + src].value;
    }
    f.wait = Wait::None;
  }
  w.warp_waiting[warp] = 0;
}

void release_block(Worker& w) {
  for (Fiber& f : w.fibers)
    if (!f.done && f.wait == Wait::Block) f.wait = Wait::None;
  w.block_waiting = 0;
}

// After fiber f stopped (waits or exited): release what its arrival completed.
void after_arrival(Worker& w, int warp) {
  if (w.warp_waiting[warp] > 0 && w.warp_waiting[warp] == w.warp_live[warp]) resolve_warp(w, warp);
  if (w.live > 0 && w.block_waiting == w.live) release_block(w);
}

[[noreturn]] void fiber_main() {
  Worker& w = t_worker;
#if LLMWB_EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &w.sched_bottom, &w.sched_size);
#endif
  try {
    (*w.body)();
  } catch (const std::exception& e) {
    fail(w, where(*w.cur) + ": threw " + e.what());
  } catch (...) {
    fail(w, where(*w.cur) + ": threw");
  }
  Fiber& f = *w.cur;
  f.done = true;
  --w.live;
  const int warp = linear_id(w, f) / 32;
  --w.warp_live[warp];
  after_arrival(w, warp);
#if LLMWB_EMU_ASAN
  __sanitizer_start_switch_fiber(nullptr, w.sched_bottom, w.sched_size);   // this fiber ends
#endif
  llmwb_emu_switch(&f.sp, w.sched_sp);
  std::abort();   // a finished fiber is never resumed
}

void warp_op(Worker& w) {
  Fiber& f = *w.cur;
  const int warp = linear_id(w, f) / 32;
  f.wait = Wait::Warp;
  ++w.warp_waiting[warp];
  after_arrival(w, warp);
  while (f.wait != Wait::None && !w.failed) yield(w);
}

// Runs one block; false when it failed (w.why says why).
bool run_block(Worker& w, const std::function<void()>& body, dim3 grid, dim3 block, uint3 bidx, void* smem) {
  w.n = static_cast<int>(block.x * block.y * block.z);
  grow_stacks(w, w.n);
  w.fibers.assign(w.n, Fiber{});
  const int warps = (w.n + 31) / 32;
  w.warp_live.assign(warps, 0);
  w.warp_waiting.assign(warps, 0);
  for (int i = 0; i < w.n; ++i) {
    Fiber& f = w.fibers[i];
    f.tc.thread_idx = uint3{unsigned(i) % block.x, unsigned(i) / block.x % block.y, unsigned(i) / (block.x * block.y)};
    f.tc.block_idx = bidx;
    f.tc.block_dim = block;
    f.tc.grid_dim = grid;
    f.tc.dyn_smem = smem;
    f.sp = fresh_stack(w.stacks[i]);
    f.stack = w.stacks[i] + ::getpagesize();
    ++w.warp_live[i / 32];
  }
  w.live = w.n;
  w.block_waiting = 0;
  w.body = &body;
  std::vector<int> order;
  const bool forward = schedule_state().order == Schedule::Forward;
  const uint64_t block_salt = (uint64_t(bidx.z) << 42) ^ (uint64_t(bidx.y) << 21) ^ bidx.x;
  // Shuffle also holds back a random half of the warps each round, so warps drift apart by
  // several warp operations between block barriers (as they do on a GPU) and a write that
  // another warp's earlier read should have been waited for lands first.
  const bool lag = schedule_state().order == Schedule::Shuffle && warps > 1;
  std::vector<uint8_t> held(size_t(warps), 0);
  std::mt19937_64 lag_rng(schedule_state().seed ^ block_salt ^ 0xA5A5A5A5ull);
  for (uint64_t round = 0; w.live > 0 && !w.failed; ++round) {
    bool ran = false, skipped = false;
    if (!forward) order_indices(order, w.n, block_salt * 1000003u + round);
    if (lag)
      for (auto& h : held) h = static_cast<uint8_t>(lag_rng() & 1);
    for (int k = 0; k < w.n; ++k) {
      Fiber& f = w.fibers[size_t(forward ? k : order[size_t(k)])];
      if (f.done || f.wait != Wait::None) continue;
      if (lag && held[size_t(linear_id(w, f) / 32)]) {
        skipped = true;
        continue;
      }
      resume(w, f);
      ran = true;
      if (w.failed) break;
    }
    if (!ran && skipped) continue;   // only held-back warps could run: next round
    if (!ran && w.live > 0 && !w.failed) {
      std::string what = "deadlock: no thread can go on (";
      int shown = 0;
      for (const Fiber& f : w.fibers) {
        if (f.done || shown >= 4) continue;
        what += (shown++ ? "; " : "") + where(f) +
                (f.wait == Wait::Block ? " at __syncthreads" : f.shfl ? " at a shuffle" : " at __syncwarp");
      }
      fail(w, what + ") — threads of one block wait at different barriers");
    }
  }
  w.cur = nullptr;
  return !w.failed;
}

}  // namespace

ThreadCtx& ctx() { return t_worker.cur->tc; }

void set_schedule(Schedule s, uint64_t seed) {
  schedule_state().order = s;
  schedule_state().seed = seed;
}
Schedule schedule() { return schedule_state().order; }

void syncthreads() {
  Worker& w = t_worker;
  Fiber& f = *w.cur;
  f.wait = Wait::Block;
  ++w.block_waiting;
  after_arrival(w, linear_id(w, f) / 32);
  while (f.wait != Wait::None && !w.failed) yield(w);
}

void syncwarp(unsigned mask) {
  Worker& w = t_worker;
  w.cur->shfl = false;
  w.cur->mask = mask;
  warp_op(w);
}

uint64_t shuffle(unsigned mask, uint64_t bits, int arg, int width, bool xor_mode) {
  Worker& w = t_worker;
  Fiber& f = *w.cur;
  f.shfl = true;
  f.mask = mask;
  f.value = bits;
  f.arg = arg;
  f.width = width;
  f.xor_mode = xor_mode;
  warp_op(w);
  return f.result;
}

namespace detail {

std::string current_thread() { return t_worker.cur ? " (" + where(*t_worker.cur) + ")" : std::string(); }

bool run_grid(const KernelRun& k, std::string& why) {
  if (t_in_kernel) {
    why = "a kernel launched another kernel (dynamic parallelism is not emulated)";
    return false;
  }
  t_in_kernel = true;
  Worker& w = t_worker;
  w.failed = false;
  w.why.clear();
  w.name = k.name.c_str();
  std::vector<unsigned char> smem(std::max<size_t>(16, k.smem) + 16);
  void* aligned = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(smem.data()) + 15) & ~uintptr_t(15));
  bool ok = true;
  const uint64_t n_blocks = uint64_t(k.grid.x) * k.grid.y * k.grid.z;
  std::vector<int> blocks;
  const bool in_order = schedule_state().order == Schedule::Forward || n_blocks > (1u << 24);
  if (!in_order) order_indices(blocks, static_cast<int>(n_blocks), 0x5EEDull);
  for (uint64_t b = 0; b < n_blocks && ok; ++b) {
    const uint64_t id = in_order ? b : uint64_t(blocks[size_t(b)]);
    const uint3 bidx{unsigned(id % k.grid.x), unsigned(id / k.grid.x % k.grid.y), unsigned(id / (uint64_t(k.grid.x) * k.grid.y))};
    // Shared memory holds garbage on a GPU: NaN bytes here, so a read before a write shows.
    std::memset(aligned, 0xFF, k.smem);
    ok = run_block(w, k.body, k.grid, k.block, bidx, aligned);
  }
  t_in_kernel = false;
  if (!ok) why = w.why;
  return ok;
}

}  // namespace detail
}  // namespace llmwb::emu
