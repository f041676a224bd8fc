#include "runner/host_memory.h"

#include <fstream>
#include <string>

namespace llmwb {

uint64_t host_available_memory_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 4ull << 30;
}

}  // namespace llmwb
