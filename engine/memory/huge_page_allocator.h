// huge_page_allocator.h — a std::allocator for the big activation and scratch buffers of the
// forward pass (megabytes each at prefill), asking the kernel for transparent huge pages.
//
// Why: a 512-token prefill's GEMM writes y[t][o] one token row at a time, 8-22 KiB apart,
// and streams the packed x panel, so with 4 KiB pages nearly every token row is a different
// page and a different TLB entry; the stores and prefetches then wait on page walks (perf on
// an f32 prefill: ~1.5 % of the time on the y prefetches alone). Under THP "madvise" (the
// common distribution default) memory is only backed by 2 MiB pages when asked with
// madvise(MADV_HUGEPAGE). Allocations of at least 2 MiB are therefore 2 MiB-aligned and
// advised; smaller ones, and other systems, take plain operator new. Contents and sizes are
// unchanged, so results are too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace llmwb {

template <class T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr size_t kHuge = size_t{2} << 20;

  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}

  T* allocate(size_t n) {
    if (n > static_cast<size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    const size_t bytes = n * sizeof(T);
    if (bytes < kHuge) return static_cast<T*>(::operator new(bytes));
    const size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
    void* p = ::operator new(rounded, std::align_val_t{kHuge});
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    (void)madvise(p, rounded, MADV_HUGEPAGE);   // advice only: without THP, plain pages
#endif
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHuge) {
      ::operator delete(p);
    } else {
      ::operator delete(p, std::align_val_t{kHuge});
    }
  }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const noexcept {
    return true;
  }
};

// n elements of a trivial type, left untouched (pages become resident as they are first
// written), from HugePageAllocator: the KV cache's pools. Attention reads one head's K/V rows a
// whole KV slot apart, a different 4 KiB page every row or two, so on small pages each row
// took a TLB miss (perf: a fifth of a 512-token prefill's score time on the first load of a
// row).
template <class T>
struct HugeArrayDelete {
  size_t n = 0;
  void operator()(T* p) const noexcept { HugePageAllocator<T>().deallocate(p, n); }
};
template <class T>
using HugeArray = std::unique_ptr<T[], HugeArrayDelete<T>>;
template <class T>
HugeArray<T> make_huge_array(size_t n) {
  return HugeArray<T>(HugePageAllocator<T>().allocate(n), HugeArrayDelete<T>{n});
}

// A float buffer of the forward pass.
using HugeFloatVector = std::vector<float, HugePageAllocator<float>>;

// At least `floats` floats of v at a 64-byte aligned address (a cache line: a vector load that
// splits two lines costs two); v only grows, so a hot path that keeps v allocates only when a
// call is bigger than every earlier one.
inline float* grow_aligned(HugeFloatVector& v, size_t floats) {
  if (v.size() < floats + 16) v.resize(floats + 16);
  return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(v.data()) + 63) & ~uintptr_t{63});
}

}  // namespace llmwb
