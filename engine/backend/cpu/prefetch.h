// prefetch.h — software prefetches that stay in the binary. GCC treats __builtin_prefetch /
// _mm_prefetch as having no effect: a small helper that only prefetches (with an early return,
// `if (ahead == 0) return;`) was classified "looping const" by its pure-const analysis and every
// call to it deleted, silently, in the one-token quantized GEMVs. The kernels' prefetches are
// therefore volatile asm, which no pass removes: what the source says is what runs. A prefetch
// never faults, so addresses past a buffer's end are fine.
#pragma once

namespace llmwb::cpu {

#if defined(__x86_64__) || defined(__i386__)
// Into L1 (prefetcht0) / into L2 (prefetcht1) the line holding p.
inline void prefetch_t0(const void* p) { asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p))); }
inline void prefetch_t1(const void* p) { asm volatile("prefetcht1 %0" : : "m"(*static_cast<const char*>(p))); }
#else
inline void prefetch_t0(const void* p) { __builtin_prefetch(p, 0, 3); }
inline void prefetch_t1(const void* p) { __builtin_prefetch(p, 0, 2); }
#endif

}  // namespace llmwb::cpu
