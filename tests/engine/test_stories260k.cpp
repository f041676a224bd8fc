// stories260K end to end: greedy generation from a BOS-only prompt reproduces the published
// llama2.c output, from each of the three file formats, through the public LLM API.
#include <gtest/gtest.h>

#include "llmwb/llm.h"
#include "support/test_support.h"

using namespace llmwb;

namespace {

std::string reference_text() {
  std::string t = test::read_file(test::shared_path("models/stories260K/greedy-from-bos.txt"));
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

std::string greedy_from_bos(const std::string& model, const std::string& tokenizer = {}) {
  EngineConfig c;
  c.model = model;
  c.tokenizer = tokenizer;
  c.threads = 2;
  c.max_model_len = 512;   // the GGUF's llama.context_length says 128; the model was trained on 512
  LLM llm(c);
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 256;   // llama2.c -n 256: 256 forward passes, each sampling one token
  auto out = llm.generate({""}, p);
  EXPECT_TRUE(out[0].error.empty()) << out[0].error;
  std::string t = out[0].outputs[0].text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

TEST(Stories260K, GreedyFromBosMatchesPublishedOutputFromLlama2cBin) {
  EXPECT_EQ(greedy_from_bos(test::shared_path("models/stories260K/stories260K.bin"),
                            test::shared_path("models/stories260K/tok512.bin")),
            reference_text());
}

TEST(Stories260K, GreedyFromBosMatchesPublishedOutputFromLlama2cBinWithSentencePieceTokenizer) {
  EXPECT_EQ(greedy_from_bos(test::shared_path("models/stories260K/stories260K.bin"),
                            test::shared_path("models/stories260K/tok512.model")),
            reference_text());
}

TEST(Stories260K, GreedyFromBosMatchesPublishedOutputFromGguf) {
  EXPECT_EQ(greedy_from_bos(test::shared_path("models/stories260K/stories260K.gguf")), reference_text());
}

TEST(Stories260K, GreedyFromBosMatchesPublishedOutputFromHuggingFaceFolder) {
  EXPECT_EQ(greedy_from_bos(test::shared_path("models/stories260K/hf")), reference_text());
}

}  // namespace
