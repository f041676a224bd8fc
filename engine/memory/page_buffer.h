// page_buffer.h — a zero-filled buffer of whole pages taken straight from the kernel (RAII),
// for big, long-lived weight data: the repacked 4-bit copies (qrepack.h) and the tensors
// quantized at load (weight_quantizer.h).
//
// Two things std::vector cannot do:
//  - Huge pages. A decode step streams every weight once; with 4 KiB pages each page is a
//    TLB miss and a page walk (a two-level one inside a VM) ahead of the software prefetches.
//    Under THP "madvise" (the common distribution default) memory gets 2 MiB pages only when
//    asked with madvise(MADV_HUGEPAGE), so a buffer made with huge_pages = true starts on a
//    2 MiB boundary and is advised. Its size is only rounded up to 4 KiB: the mapping ends
//    there, so the last partial 2 MiB stays in small pages instead of a whole huge page
//    (HugePageAllocator rounds up to 2 MiB, which would cost ~2 MiB of RSS per matrix).
//  - discard(): once a tensor's bytes have been copied elsewhere, its pages go back to the
//    system and the range becomes inaccessible, so a stray read faults instead of silently
//    reading zeros (MADV_DONTNEED alone zeroes anonymous memory), while the address stays
//    reserved: TensorViews pointing at it stay unique keys (RepackCache).
#pragma once

#include <cstddef>
#include <cstdint>

namespace llmwb {

class PageBuffer {
 public:
  PageBuffer() = default;
  // Throws llmwb::Error("memory", ...) when the system refuses the mapping.
  explicit PageBuffer(uint64_t bytes, bool huge_pages = false);
  ~PageBuffer();
  PageBuffer(PageBuffer&& o) noexcept;
  PageBuffer& operator=(PageBuffer&& o) noexcept;
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }   // as asked, not rounded
  bool discarded() const { return discarded_; }
  // Returns the pages to the system; the address range stays reserved but unreadable.
  void discard();

 private:
  void release();
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t mapped_ = 0;   // the mapping's length (size_ rounded up to pages)
  bool discarded_ = false;
};

}  // namespace llmwb
