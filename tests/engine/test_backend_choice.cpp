// The backend choice: "cpu" always runs; "cuda" runs where this build has CUDA and a device,
// and otherwise fails at load with an llmwb::Error that says why; anything else is rejected.
#include <gtest/gtest.h>

#include <string>

#include "runner/device_model.h"
#if defined(LLMWB_HAVE_CUDA)
#include "backend/cuda/cublas_loader.h"
#endif
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

#if defined(LLMWB_HAVE_CUDA)
// cuBLAS is not linked (every process would map and relocate it): the CUDA backend opens it on
// first use. Opening needs no GPU, only the toolkit this build was made with.
TEST(BackendChoice, CublasOpensOnFirstUseWithEveryEntryPoint) {
  const cuda::CublasApi& api = cuda::cublas();
  EXPECT_NE(api.create, nullptr);
  EXPECT_NE(api.destroy, nullptr);
  EXPECT_NE(api.set_stream, nullptr);
  EXPECT_NE(api.set_workspace, nullptr);
  EXPECT_NE(api.sgemm, nullptr);
  EXPECT_NE(api.gemm_ex, nullptr);
  EXPECT_STREQ(api.status_name(CUBLAS_STATUS_NOT_INITIALIZED), "CUBLAS_STATUS_NOT_INITIALIZED");
  EXPECT_NE(std::string(api.status_string(CUBLAS_STATUS_NOT_INITIALIZED)), "");
}
#endif
