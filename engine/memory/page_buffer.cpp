// page_buffer.cpp — anonymous private mappings; see page_buffer.h for why.
#include "memory/page_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "llmwb/errors.h"

namespace llmwb {

namespace {
constexpr uint64_t kHuge = uint64_t{2} << 20;
}

PageBuffer::PageBuffer(uint64_t bytes, bool huge_pages) : size_(bytes) {
  if (bytes == 0) return;
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  mapped_ = (bytes + page - 1) / page * page;
  // For huge pages, over-map by 2 MiB and unmap both ends so the range starts on a 2 MiB
  // boundary and ends right after the last page used.
  const uint64_t extra = huge_pages ? kHuge : 0;
  void* p = ::mmap(nullptr, mapped_ + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw Error("memory", "cannot map " + std::to_string(bytes) + " bytes: " + std::strerror(errno));
  auto* base = static_cast<uint8_t*>(p);
  if (huge_pages) {
    const uintptr_t a = (reinterpret_cast<uintptr_t>(base) + kHuge - 1) & ~uintptr_t{kHuge - 1};
    auto* aligned = reinterpret_cast<uint8_t*>(a);
    if (aligned > base) ::munmap(base, static_cast<size_t>(aligned - base));
    const uint64_t tail = static_cast<uint64_t>(base + mapped_ + extra - (aligned + mapped_));
    if (tail > 0) ::munmap(aligned + mapped_, tail);
    base = aligned;
#if defined(MADV_HUGEPAGE)
    (void)::madvise(base, mapped_, MADV_HUGEPAGE);   // advice only: without THP, small pages
#endif
  }
  data_ = base;
}

void PageBuffer::release() {
  if (data_ != nullptr) ::munmap(data_, mapped_);
  data_ = nullptr;
  size_ = mapped_ = 0;
  discarded_ = false;
}

PageBuffer::~PageBuffer() { release(); }

PageBuffer::PageBuffer(PageBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      mapped_(std::exchange(o.mapped_, 0)),
      discarded_(std::exchange(o.discarded_, false)) {}

PageBuffer& PageBuffer::operator=(PageBuffer&& o) noexcept {
  if (this != &o) {
    release();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    mapped_ = std::exchange(o.mapped_, 0);
    discarded_ = std::exchange(o.discarded_, false);
  }
  return *this;
}

void PageBuffer::discard() {
  if (data_ == nullptr || discarded_) return;
  // A fresh inaccessible mapping over the same range drops the pages in one step and keeps
  // the addresses reserved (MAP_FIXED replaces the old mapping atomically).
  void* p = ::mmap(data_, mapped_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {   // cannot happen for a range we own; fall back to dropping the pages
    (void)::madvise(data_, mapped_, MADV_DONTNEED);
    (void)::mprotect(data_, mapped_, PROT_NONE);
  }
  discarded_ = true;
}

}  // namespace llmwb
