// mapped_file.h — a read-only memory map of a whole file (RAII).
// Weights are used in place from the map, so loading a 2 GB file costs address space,
// not a second copy in memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace llmwb {

class MappedFile {
 public:
  // Throws llmwb::Error(path, reason) when the file cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

// Drops the whole pages of [p, p + n) from this process's RSS when they all lie in one
// read-only private file mapping (checked in /proc/self/maps), such as a MappedFile's; returns
// whether it did. Safe there: anything reading them later refaults them from the file. On
// anonymous or writable memory it does nothing (MADV_DONTNEED would zero the data). Used once
// a weight's bytes have been copied elsewhere (4-bit repacking, load-time quantization).
bool release_mapped_pages(const void* p, uint64_t n);

}  // namespace llmwb
