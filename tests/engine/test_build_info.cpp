// BuildInfo: the one place --version and Help > About read.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "llmwb/build_info.h"

using namespace llmwb;

namespace {

// "N.N.N" with at least one digit each (no std::regex: GCC 12's -Wmaybe-uninitialized fires
// inside <regex> in the sanitizer build).
bool is_version(const std::string& v) {
  int parts = 0, digits = 0;
  for (char c : v + ".") {
    if (c == '.') {
      if (digits == 0) return false;
      ++parts;
      digits = 0;
    } else if (c >= '0' && c <= '9') {
      ++digits;
    } else {
      return false;
    }
  }
  return parts == 3;
}

// 12 lowercase hex digits, optionally "-dirty", or "unknown".
bool is_commit(const std::string& c) {
  if (c == "unknown") return true;
  std::string hash = c;
  const std::string dirty = "-dirty";
  if (hash.size() > dirty.size() && hash.compare(hash.size() - dirty.size(), dirty.size(), dirty) == 0)
    hash.resize(hash.size() - dirty.size());
  return hash.size() == 12 &&
         std::all_of(hash.begin(), hash.end(), [](char x) { return (x >= '0' && x <= '9') || (x >= 'a' && x <= 'f'); });
}

}  // namespace

TEST(BuildInfo, VersionIsTheProjectVersion) {
  EXPECT_TRUE(is_version(build_info().version)) << build_info().version;
  EXPECT_FALSE(is_version("1.2")) << "the check itself";
}

TEST(BuildInfo, CommitIsAGitHashOrUnknown) {
  EXPECT_TRUE(is_commit(build_info().commit)) << build_info().commit;
  EXPECT_FALSE(is_commit("12345")) << "the check itself";
}

TEST(BuildInfo, NamesTheCompiledCpuKernelLevelsScalarFirst) {
  EXPECT_EQ(build_info().simd_levels.rfind("scalar", 0), 0u) << build_info().simd_levels;
#if defined(__x86_64__)
  EXPECT_NE(build_info().simd_levels.find("avx2"), std::string::npos) << build_info().simd_levels;
#endif
}

TEST(BuildInfo, CudaFlagAgreesWithTheBuild) {
#ifdef LLMWB_HAVE_CUDA
  EXPECT_TRUE(build_info().cuda);
#else
  EXPECT_FALSE(build_info().cuda);
#endif
  EXPECT_FALSE(build_info().cuda_detail.empty());
}

TEST(BuildInfo, TextShowsVersionCommitAndOptionsOnFourLines) {
  const BuildInfo& b = build_info();
  const std::string t = build_info_text();
  EXPECT_EQ(t.rfind("llmwb " + b.version + " (commit " + b.commit + ")\n", 0), 0u) << t;
  EXPECT_NE(t.find("build: " + b.build_type), std::string::npos) << t;
  EXPECT_NE(t.find(std::string("CUDA backend: ") + (b.cuda ? "on" : "off")), std::string::npos) << t;
  EXPECT_NE(t.find("CPU kernels: " + b.simd_levels + "\n"), std::string::npos) << t;
  EXPECT_EQ(std::count(t.begin(), t.end(), '\n'), 4) << t;
}
