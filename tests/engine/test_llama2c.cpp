// Tests of the llama2.c checkpoint loader: stories260K.bin against the GGUF llama.cpp's own
// converter made from it, in-place views, and the header / size checks.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "llmwb/errors.h"
#include "format/model_file.h"
#include "support/loader_expectations.h"
#include "support/test_support.h"

namespace llmwb {
namespace {

const std::string kBin = "models/stories260K/stories260K.bin";

// Writes `bytes` into a scratch file and expects load_llama2c to fail naming the file and
// every one of `parts`.
void expect_rejected(const std::string& test, const std::string& bytes, std::vector<std::string> parts) {
  const std::string path = test::scratch_dir(test) + "/model.bin";
  test::write_file(path, bytes);
  parts.push_back(path);
  test::expect_error_naming([&] { load_llama2c(path); }, parts);
}

std::string with_header_field(std::string bytes, int field, int32_t value) {
  std::memcpy(bytes.data() + 4 * field, &value, 4);
  return bytes;
}

TEST(Llama2c, Stories260KHeaderGivesTheConfig) {
  const auto m = load_llama2c(test::shared_path(kBin));
  const ModelConfig& c = m->config;
  EXPECT_EQ(m->format, "llama2c");
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.hidden_dim, 172);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.max_seq_len, 512);
  EXPECT_TRUE(c.tied_embeddings);
  EXPECT_EQ(c.rope_layout, RopeLayout::Interleaved);
  EXPECT_FLOAT_EQ(c.norm_eps, 1e-5f);
  EXPECT_TRUE(m->tokenizer.empty()) << "a llama2.c checkpoint carries no tokenizer";
  EXPECT_EQ(m->find("output.weight"), nullptr);
  EXPECT_EQ(m->tensors.size(), 1u + 5u * 9u + 1u);
}

TEST(Llama2c, TensorsAreViewsIntoTheMappedFile) {
  const auto m = load_llama2c(test::shared_path(kBin));
  ASSERT_EQ(m->maps.size(), 1u);
  const uint8_t* lo = m->maps[0]->data();
  const uint8_t* hi = lo + m->maps[0]->size();
  for (const auto& t : m->tensors) {
    EXPECT_GE(t.data, lo) << t.name;
    EXPECT_LE(t.data + t.nbytes, hi) << t.name;
    EXPECT_EQ(t.nbytes, static_cast<uint64_t>(t.numel()) * 4u) << t.name;
  }
  // Layer 1's wq follows layer 0's inside the one wq array.
  EXPECT_EQ(m->get("blk.1.attn_q.weight").data, m->get("blk.0.attn_q.weight").data + 64 * 64 * 4);
}

TEST(Llama2c, Stories260KMatchesTheGgufBitForBit) {
  const auto bin = load_llama2c(test::shared_path(kBin));
  const auto gguf = load_gguf(test::shared_path("models/stories260K/stories260K.gguf"));
  test::expect_same_shape(bin->config, gguf->config);
  EXPECT_EQ(bin->config.rope_layout, gguf->config.rope_layout);
  // (llama.cpp's converter writes context_length 128 and a copy of the embedding as
  // output.weight, so those two legitimately differ.)
  for (const auto& t : bin->tensors) {
    const TensorView& g = gguf->get(t.name);
    EXPECT_EQ(g.dtype, DType::F32) << t.name;
    ASSERT_EQ(g.shape, t.shape) << t.name;
    ASSERT_EQ(g.nbytes, t.nbytes) << t.name;
    EXPECT_EQ(std::memcmp(g.data, t.data, t.nbytes), 0) << t.name << " differs";
  }
  if (const TensorView* out = gguf->find("output.weight")) {
    const TensorView& emb = bin->get("token_embd.weight");
    ASSERT_EQ(out->nbytes, emb.nbytes);
    EXPECT_EQ(std::memcmp(out->data, emb.data, emb.nbytes), 0);
  }
}

TEST(Llama2c, NegativeVocabularyMeansAnUnsharedClassifier) {
  std::string bytes = test::read_file(test::shared_path(kBin));
  bytes = with_header_field(bytes, 5, -512);
  std::vector<float> wcls(512 * 64);
  for (size_t i = 0; i < wcls.size(); ++i) wcls[i] = 0.001f * static_cast<float>(i % 997) - 0.3f;
  bytes.append(reinterpret_cast<const char*>(wcls.data()), wcls.size() * 4);
  const std::string path = test::scratch_dir("llama2c_unshared") + "/model.bin";
  test::write_file(path, bytes);
  const auto m = load_llama2c(path);
  EXPECT_FALSE(m->config.tied_embeddings);
  EXPECT_EQ(m->config.vocab_size, 512);
  const TensorView& out = m->get("output.weight");
  EXPECT_EQ(out.shape, std::vector<int64_t>({512, 64}));
  EXPECT_EQ(std::memcmp(out.data, wcls.data(), wcls.size() * 4), 0);
}

TEST(Llama2c, RejectsAFileWhoseSizeDisagreesWithTheHeader) {
  std::string bytes = test::read_file(test::shared_path(kBin));
  bytes.resize(bytes.size() - 4);
  expect_rejected("llama2c_short", bytes, {"size mismatch", "implies 1056540 bytes", "has 1056536"});
  bytes += std::string(12, '\0');
  expect_rejected("llama2c_long", bytes, {"implies 1056540 bytes", "has 1056548"});
}

TEST(Llama2c, RejectsInsaneHeaderValues) {
  const std::string bytes = test::read_file(test::shared_path(kBin));
  expect_rejected("llama2c_zero_dim", with_header_field(bytes, 0, 0), {"dim", "is 0"});
  expect_rejected("llama2c_neg_layers", with_header_field(bytes, 2, -3), {"n_layers", "-3"});
  expect_rejected("llama2c_zero_vocab", with_header_field(bytes, 5, 0), {"vocab_size"});
  expect_rejected("llama2c_heads", with_header_field(bytes, 3, 7), {"dim 64", "n_heads 7"});
  expect_rejected("llama2c_kv", with_header_field(bytes, 4, 3), {"n_heads 8", "n_kv_heads 3"});
  // A huge header must be reported as a size mismatch, not wrap around or allocate.
  expect_rejected("llama2c_huge", with_header_field(with_header_field(bytes, 0, 1 << 30), 3, 1 << 20),
                  {"size mismatch"});
  expect_rejected("llama2c_tiny", bytes.substr(0, 20), {"too short"});
}

}  // namespace
}  // namespace llmwb
