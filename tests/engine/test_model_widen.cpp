// Tests of the function-preserving widening (model_widen.h): the wide model's logits equal its
// source's under the float64 reference forward pass, for stories260K (a trained Llama, GQA) and
// for random Qwen2 (Q/K/V biases, tied head) and Qwen3 (per-head Q/K norm, head_dim != dim /
// heads) models; it survives a GGUF round trip; noise makes the copies differ without changing
// the shape; bad options are refused with the option's name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "format/model_file.h"
#include "llmwb/errors.h"
#include "model/model_maker.h"
#include "model/model_widen.h"
#include "quant/gguf_model_writer.h"
#include "support/reference_forward.h"
#include "support/test_support.h"

namespace llmwb {
namespace {

const std::string kStories = "models/stories260K/stories260K.gguf";

// Largest |a - b| over the logits of `tokens`, fed one at a time, relative to the largest |a|.
double logits_gap(const ModelFile& a, const ModelFile& b, const std::vector<int>& tokens) {
  test::ReferenceLlama ra(a), rb(b);
  double gap = 0, scale = 0;
  for (int t : tokens) {
    const std::vector<double> la = ra.step(t), lb = rb.step(t);
    EXPECT_EQ(la.size(), lb.size());
    for (size_t i = 0; i < la.size() && i < lb.size(); ++i) {
      gap = std::max(gap, std::abs(la[i] - lb[i]));
      scale = std::max(scale, std::abs(la[i]));
    }
  }
  return gap / scale;
}

TEST(ModelWiden, Stories260KWidenedComputesTheSameLogits) {
  const auto src = load_model_file(test::shared_path(kStories));
  WidenOptions o;
  o.factor = 4;
  const auto wide = widen_model(*src, o);
  const ModelConfig& c = wide->config;
  EXPECT_EQ(c.dim, src->config.dim * 4);
  EXPECT_EQ(c.hidden_dim, src->config.hidden_dim * 4);
  EXPECT_EQ(c.n_heads, src->config.n_heads * 4);
  EXPECT_EQ(c.n_kv_heads, src->config.n_kv_heads * 4);
  EXPECT_EQ(c.head_dim, src->config.head_dim);
  EXPECT_EQ(c.vocab_size, src->config.vocab_size);
  // Every layer matrix holds f^2 times the source's elements; norm gains f times.
  for (const TensorView& t : wide->tensors) {
    const TensorView* s = src->find(t.name);
    if (!s) continue;
    const bool layer_matrix = t.shape.size() == 2 && t.name.starts_with("blk.");
    const bool gain = t.shape.size() == 1 && t.name.ends_with("norm.weight");
    if (layer_matrix) {
      EXPECT_EQ(t.numel(), 16 * s->numel()) << t.name;
    }
    if (gain) {
      EXPECT_EQ(t.numel(), 4 * s->numel()) << t.name;
    }
  }
  // The function: every logit of a 24-token story within float rounding of the source's.
  const std::vector<int> story = {1, 403, 407, 261, 378, 309, 285, 263, 377, 348, 261, 366,
                                  338, 273, 266, 262, 365, 308, 395, 263, 343, 351, 270, 453};
  EXPECT_LT(logits_gap(*src, *wide, story), 1e-6);
}

TEST(ModelWiden, QwenVariantsAndTiedHeadsKeepTheirFunction) {
  for (const std::string arch : {"qwen2", "qwen3"}) {
    SCOPED_TRACE(arch);
    ModelMakerOptions m;
    m.config = test::family_test_config(arch, 32, 48, arch == "qwen3" ? 12 : 8, 300);
    m.seed = 5;
    m.out = test::scratch_dir("widen_" + arch) + "/model.gguf";
    make_model(m);
    const auto src = load_model_file(m.out);
    ASSERT_TRUE(src->config.tied_embeddings);
    WidenOptions o;
    o.factor = 3;
    const auto wide = widen_model(*src, o);
    EXPECT_FALSE(wide->config.tied_embeddings);
    EXPECT_EQ(wide->config.head_dim, src->config.head_dim);
    EXPECT_LT(logits_gap(*src, *wide, {1, 7, 30, 2, 263, 11, 140, 5}), 1e-6);
  }
}

TEST(ModelWiden, RoundTripsThroughGgufAndNoiseMakesTheCopiesDiffer) {
  const auto src = load_model_file(test::shared_path(kStories));
  WidenOptions o;
  o.factor = 2;
  o.dtype = DType::F16;
  const auto exact = widen_model(*src, o);
  const std::string path = test::scratch_dir("widen_roundtrip") + "/wide.gguf";
  write_model_gguf(*exact, path, "");
  const auto back = load_model_file(path);
  EXPECT_EQ(back->config.dim, exact->config.dim);
  EXPECT_EQ(back->config.n_kv_heads, exact->config.n_kv_heads);
  EXPECT_EQ(back->get("blk.0.ffn_down.weight").dtype, DType::F16);
  const std::vector<int> tokens = {1, 403, 407, 261, 378, 309, 285, 263};
  EXPECT_LT(logits_gap(*src, *back, tokens), 2e-2);   // f16 weights

  o.noise = 0.05f;
  o.seed = 3;
  const auto noisy = widen_model(*src, o);
  const TensorView& t = noisy->get("blk.1.attn_q.weight");
  std::vector<float> r0(size_t(t.cols())), r1(size_t(t.cols()));
  // Row 0 and its copy (row n_heads_src * head_dim) differ only by the noise.
  dequantize_row(t.dtype, t.row(0), r0.data(), t.cols());
  dequantize_row(t.dtype, t.row(t.rows() / 2), r1.data(), t.cols());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < r0.size(); ++i) diff += std::abs(r0[i] - r1[i]), norm += std::abs(r0[i]);
  EXPECT_GT(diff, 0.01 * norm);
  EXPECT_LT(diff, 0.5 * norm);
  const double gap = logits_gap(*src, *noisy, tokens);
  EXPECT_GT(gap, 1e-4);
  EXPECT_LT(gap, 0.5);
}

TEST(ModelWiden, BadOptionsNameTheOption) {
  const auto src = load_model_file(test::shared_path(kStories));
  WidenOptions o;
  o.factor = 0;
  EXPECT_NE(test::error_of([&] { widen_model(*src, o); }).find("widen"), std::string::npos);
  o.factor = 2;
  o.noise = -1;
  EXPECT_NE(test::error_of([&] { widen_model(*src, o); }).find("noise"), std::string::npos);
  o.noise = 0;
  o.dtype = DType::Q4_0;
  EXPECT_NE(test::error_of([&] { widen_model(*src, o); }).find("dtype"), std::string::npos);
  ModelFile odd;
  odd.path = src->path;
  odd.config = src->config;
  odd.tensors = src->tensors;
  odd.tensors.push_back(odd.get("output_norm.weight"));
  odd.tensors.back().name = "blk.0.mystery.weight";
  o.dtype = DType::F32;
  const std::string e = test::error_of([&] { widen_model(odd, o); });
  EXPECT_NE(e.find("blk.0.mystery.weight"), std::string::npos) << e;
}

}  // namespace
}  // namespace llmwb
