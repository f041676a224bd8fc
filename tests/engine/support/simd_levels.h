// simd_levels.h — test helpers for code with one kernel per SIMD level (matmul, qmatmul):
// the levels this CPU can run, and a guard that restores the level a test changed.
#pragma once

#include <vector>

#include "backend/cpu/matmul.h"

namespace llmwb::test {

// Every level set_simd_level accepts here (it never raises the level above the CPU's).
inline std::vector<cpu::SimdLevel> available_levels() {
  std::vector<cpu::SimdLevel> out;
  const cpu::SimdLevel saved = cpu::simd_level();
  for (cpu::SimdLevel l : {cpu::SimdLevel::Scalar, cpu::SimdLevel::Avx2, cpu::SimdLevel::Avx512}) {
    cpu::set_simd_level(l);
    if (cpu::simd_level() == l) out.push_back(l);
  }
  cpu::set_simd_level(saved);
  return out;
}

// Sets a level for a scope and restores the previous one.
class SimdLevelGuard {
 public:
  explicit SimdLevelGuard(cpu::SimdLevel l) : saved_(cpu::simd_level()) { cpu::set_simd_level(l); }
  ~SimdLevelGuard() { cpu::set_simd_level(saved_); }
  SimdLevelGuard(const SimdLevelGuard&) = delete;
  SimdLevelGuard& operator=(const SimdLevelGuard&) = delete;

 private:
  cpu::SimdLevel saved_;
};

}  // namespace llmwb::test
