// mapped_file.cpp — POSIX mmap of a whole file, read-only and private.
#include "memory/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "llmwb/errors.h"

namespace llmwb {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw Error(path, std::string("cannot stat: ") + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path, S_ISDIR(st.st_mode) ? "is a directory, not a file" : "is not a regular file");
  }
  size_ = static_cast<uint64_t>(st.st_size);
  // mmap of length 0 fails; an empty file is an empty map, and the format parser reports it.
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      throw Error(path, std::string("cannot map ") + std::to_string(size_) +
                            " bytes: " + std::strerror(err));
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);   // the mapping keeps the file referenced
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

bool release_mapped_pages(const void* p, uint64_t n) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1);
  const uintptr_t hi = (reinterpret_cast<uintptr_t>(p) + n) & ~(page - 1);
  if (hi <= lo) return false;
  // Only a read-only private mapping of a file: there MADV_DONTNEED cannot lose data (pages
  // refault from the file), while on anonymous or writable memory it would zero them.
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream ls(line);
    std::string range, perms, offset, dev;
    uint64_t inode = 0;
    if (!(ls >> range >> perms >> offset >> dev >> inode)) continue;
    const size_t dash = range.find('-');
    if (dash == std::string::npos) continue;
    const uintptr_t start = std::stoull(range.substr(0, dash), nullptr, 16);
    const uintptr_t end = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (lo < start || lo >= end) continue;
    if (hi > end || perms.size() < 4 || perms[0] != 'r' || perms[1] != '-' || perms[3] != 'p' || inode == 0)
      return false;
    return ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED) == 0;
  }
  return false;
}

}  // namespace llmwb
