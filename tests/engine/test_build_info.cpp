// BuildInfo: the one place --version and Help > About read.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include "llmwb/build_info.h"

using namespace llmwb;

TEST(BuildInfo, VersionIsTheProjectVersion) {
  EXPECT_TRUE(std::regex_match(build_info().version, std::regex(R"(\d+\.\d+\.\d+)"))) << build_info().version;
}

TEST(BuildInfo, CommitIsAGitHashOrUnknown) {
  EXPECT_TRUE(std::regex_match(build_info().commit, std::regex(R"([0-9a-f]{12}(-dirty)?|unknown)")))
      << build_info().commit;
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
