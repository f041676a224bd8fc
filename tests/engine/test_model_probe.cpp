// probe_model reads what a model is from its headers: the three formats of stories260K give
// the same architecture and shape as loading it does, and a file that is no model is an error
// naming it.
#include <gtest/gtest.h>

#include <fstream>

#include "llmwb/errors.h"
#include "llmwb/model_probe.h"
#include "support/test_support.h"

using llmwb::test::shared_path;

namespace llmwb {
namespace {

TEST(ModelProbe, ReadsTheGgufHeaderWithoutATokenizer) {
  const ModelInfo info = probe_model(shared_path("models/stories260K/stories260K.gguf"));
  EXPECT_EQ(info.format, "gguf");
  EXPECT_EQ(info.architecture, "llama");
  EXPECT_EQ(info.dim, 64);
  EXPECT_EQ(info.n_layers, 5);
  EXPECT_EQ(info.vocab_size, 512);
  EXPECT_GT(info.n_params, 250000u);
  EXPECT_GT(info.context_length, 0);
  EXPECT_FALSE(info.tensors.empty());
  EXPECT_TRUE(info.backend.empty());  // nothing was loaded to run
}

TEST(ModelProbe, ReadsALlama2cCheckpointAndAHuggingFaceFolder) {
  const ModelInfo bin = probe_model(shared_path("models/stories260K/stories260K.bin"));
  EXPECT_EQ(bin.format, "llama2c");
  EXPECT_EQ(bin.context_length, 512);  // the header's seq_len
  EXPECT_EQ(bin.hidden_dim, 172);
  const ModelInfo hf = probe_model(shared_path("models/stories260K/hf"));
  EXPECT_EQ(hf.format, "safetensors");
  EXPECT_EQ(hf.n_layers, 5);
  EXPECT_EQ(hf.n_params, bin.n_params);
}

TEST(ModelProbe, AFileThatIsNoModelIsAnErrorNamingIt) {
  const std::string path = testing::TempDir() + "/not_a_model.gguf";
  std::ofstream(path) << "GGUF but not really";
  try {
    (void)probe_model(path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace llmwb
