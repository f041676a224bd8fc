// llmwb/build_info.h — what this build is: version, source commit and build options. The one
// place that `llmwb-cli --version`, the GUI's Help > About and `llmwb --version` read; the values
// are written by CMake when the build is configured (engine/core/build_info.cpp.in).
#pragma once

#include <string>

namespace llmwb {

struct BuildInfo {
  std::string version;      // project(VERSION) in CMakeLists.txt: "0.1.0"
  std::string commit;       // the source tree's git commit when the build was configured (12 hex
                            // digits, "-dirty" with uncommitted changes); "unknown" outside git
  std::string build_type;   // CMAKE_BUILD_TYPE: "Release", "RelWithDebInfo", ...
  bool cuda = false;        // the CUDA backend is compiled in (it runs where a driver and GPU exist)
  std::string cuda_detail;  // "CUDA 13.0, sm_90", "emulated", or why it is not compiled in
  std::string simd_levels;  // the CPU kernel levels compiled in, one chosen at run time:
                            // "scalar avx2 avx512 avx512vnni"
  std::string compiler;     // "GNU 12.2.0"
};

const BuildInfo& build_info();

// The lines that --version and About show:
//   llmwb 0.1.0 (commit 09fa8ed1a2b3)
//   build: Release, GNU 12.2.0
//   CUDA backend: on (CUDA 13.0, sm_90)
//   CPU kernels: scalar avx2 avx512 avx512vnni
std::string build_info_text();

}  // namespace llmwb
