// host_memory.h — memory the host has free now (/proc/meminfo MemAvailable), for sizing a KV pool.
#pragma once

#include <cstdint>

namespace llmwb {

uint64_t host_available_memory_bytes();

}  // namespace llmwb
