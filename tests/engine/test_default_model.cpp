// The demo model opened when none is named: the installed copy first, then the source tree's.
#include <gtest/gtest.h>

#include <filesystem>

#include "llmwb/default_model.h"
#include "support/test_support.h"

using namespace llmwb;
namespace fs = std::filesystem;

TEST(DefaultModel, LooksFirstUnderShareBesideTheRunningBinarysFolder) {
  const auto places = default_model_locations();
  ASSERT_EQ(places.size(), 2u);
  const fs::path prefix = fs::read_symlink("/proc/self/exe").parent_path().parent_path();
  EXPECT_EQ(places[0], (prefix / "share/llmwb/models/stories260K/stories260K.gguf").lexically_normal().string());
}

TEST(DefaultModel, ThenTheSourceTreesSharedCopy) {
  const auto places = default_model_locations();
  ASSERT_EQ(places.size(), 2u);
  EXPECT_TRUE(fs::equivalent(places[1], test::shared_path("models/stories260K/stories260K.gguf"))) << places[1];
}

TEST(DefaultModel, InABuildTreeIsFoundInTheSourceTree) {
  // Nothing is installed beside a test binary: the shared/ copy is the one found.
  ASSERT_FALSE(fs::exists(default_model_locations()[0]));
  EXPECT_EQ(find_default_model(), default_model_locations()[1]);
}
