// prefetch.h — software prefetches that stay in the binary. GCC treats a prefetch as free of
// effects: a small helper that did nothing but prefetch (`prefetch_l1`, with an early return
// for a distance of 0) was classified "looping const" by its pure-const analysis and every call
// to it deleted, silently, in the one-token quantized GEMVs. These wrappers, and every helper
// built on them, are always_inline, so the prefetches land in the kernel's own body before that
// analysis runs; the CTest decode_kernels_keep_their_prefetches checks the result.
// prefetch_t0_pinned is volatile asm, which no pass removes or moves across other volatile asm:
// the one-token quantized GEMVs use it (whole decodes ran faster with it than with the builtin:
// Q4_0 1.13-1.30x, Q8_0 1.06-1.08x, AMD Zen 4), nothing else does (it pinned the schedule of
// the F16 panels' multi-token kernel, 1.8x slower). A prefetch never faults, so addresses past a
// buffer's end are fine.
#pragma once

namespace llmwb::cpu {

// Into L1 (prefetcht0) / into L2 (prefetcht1) the line holding p.
[[gnu::always_inline]] inline void prefetch_t0(const void* p) { __builtin_prefetch(p, 0, 3); }
[[gnu::always_inline]] inline void prefetch_t1(const void* p) { __builtin_prefetch(p, 0, 2); }

#if defined(__x86_64__) || defined(__i386__)
[[gnu::always_inline]] inline void prefetch_t0_pinned(const void* p) {
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
}
#else
[[gnu::always_inline]] inline void prefetch_t0_pinned(const void* p) { __builtin_prefetch(p, 0, 3); }
#endif

}  // namespace llmwb::cpu
