// emu_internal.h — shared between the emulator's runtime (emu_runtime.cpp) and its kernel
// executor (emu_exec.cpp).
#pragma once

#include <functional>
#include <string>

#include "emu.h"

namespace llmwb::emu::detail {

struct KernelRun {
  std::string name;
  dim3 grid, block;
  size_t smem = 0;
  std::function<void()> body;
};

// Runs every block of the grid on this thread; false (with why) when a thread misused a
// barrier or a shuffle, or threw.
bool run_grid(const KernelRun& k, std::string& why);

// "block (x,y,z) thread (x,y,z)" of the CUDA thread running on this OS thread, or "".
std::string current_thread();

}  // namespace llmwb::emu::detail
