// trace_range.h — a named range on the profiler's timeline around each engine phase
// (schedule, copy blocks, forward, sample): NVTX (header-only nvtx3, shown by Nsight Systems)
// in builds with CUDA, nothing otherwise. The CUDA runner adds its own ranges inside the
// forward pass (prefill / decode, per layer with LLMWB_NVTX_LAYERS=1, logits copy). The GUI's
// timeline reads the same phases from StepTelemetry's timings.
#pragma once

#if LLMWB_HAVE_CUDA
#include <nvtx3/nvToolsExt.h>
#endif

namespace llmwb {

class TraceRange {
 public:
#if LLMWB_HAVE_CUDA
  explicit TraceRange(const char* name) { nvtxRangePushA(name); }
  ~TraceRange() { nvtxRangePop(); }
#else
  explicit TraceRange(const char*) {}
#endif
  TraceRange(const TraceRange&) = delete;
  TraceRange& operator=(const TraceRange&) = delete;
};

}  // namespace llmwb
