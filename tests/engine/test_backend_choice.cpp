// The backend choice: "cpu" always runs; "cuda" runs where this build has CUDA and a device,
// and otherwise fails at load with an llmwb::Error that says why; anything else is rejected.
#include <gtest/gtest.h>

#include "backend/device_model.h"
#include "llmwb/backends.h"
#include "llmwb/engine.h"
#include "llmwb/errors.h"
#include "support/test_support.h"

using namespace llmwb;

namespace {

EngineConfig config(const std::string& backend) {
  EngineConfig c;
  c.model = test::shared_path("models/stories260K/stories260K.gguf");
  c.backend = backend;
  c.threads = 1;
  return c;
}

TEST(BackendChoice, CudaWithoutADeviceIsAClearError) {
  const std::string why = cuda_unavailable_reason();
  if (why.empty()) GTEST_SKIP() << "a CUDA device is present (tests/gpu cover it)";
  try {
    Engine e(config("cuda"));
    FAIL() << "expected an error";
  } catch (const Error& err) {
    EXPECT_EQ(err.where(), "backend");
    EXPECT_NE(std::string(err.what()).find("'cuda' is not available: " + why), std::string::npos) << err.what();
  }
}

TEST(BackendChoice, UnknownBackendIsRejected) {
  try {
    Engine e(config("tpu"));
    FAIL() << "expected an error";
  } catch (const Error& err) {
    EXPECT_EQ(err.where(), "backend");
    EXPECT_NE(std::string(err.what()).find("'tpu'"), std::string::npos);
  }
}

TEST(BackendChoice, BuildReportsCudaConsistently) {
  if (!cuda_built()) {
    EXPECT_EQ(cuda_device_count(), 0);
    EXPECT_NE(cuda_unavailable_reason().find("no CUDA backend"), std::string::npos);
  } else if (cuda_unavailable_reason().empty()) {
    EXPECT_GT(cuda_device_count(), 0);
  } else if (cuda_device_count() == 0) {
    EXPECT_FALSE(cuda_unavailable_reason().empty());
  }
}

}  // namespace

namespace {

TEST(BackendChoice, ListBackendsNamesCpuFirstAndCudaWithItsReason) {
  const auto b = list_backends();
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].name, "cpu");
  EXPECT_TRUE(b[0].available);
  EXPECT_EQ(b[1].name, "cuda");
  EXPECT_EQ(b[1].available, cuda_unavailable_reason().empty());
  EXPECT_EQ(b[1].reason, cuda_unavailable_reason());
}

}  // namespace
