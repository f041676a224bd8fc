// Tests of the random-model maker: every dtype in both formats loads back with the shape it
// was made with and the values the generator defines (within each dtype's rounding), the two
// formats hold the same model, the vocabulary is embedded or written as tokenizer.model, and
// bad requests are refused with a named reason.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <sentencepiece_processor.h>
#include <string>

#include "llmwb/errors.h"
#include "format/model_file.h"
#include "model/model_maker.h"
#include "model/synthetic_vocab.h"
#include "support/loader_expectations.h"
#include "support/test_support.h"

namespace llmwb {
namespace {

namespace fs = std::filesystem;

std::string make(const std::string& scratch, DType dt, const std::string& format, uint64_t seed = 11,
                 const ModelConfig& c = test::small_test_config(), const std::string& tokenizer = "") {
  ModelMakerOptions o;
  o.config = c;
  o.dtype = dt;
  o.format = format;
  o.seed = seed;
  o.tokenizer_path = tokenizer;
  o.out = test::scratch_dir(scratch) + (format == "gguf" ? "/model.gguf" : "/model");
  const MadeModel made = make_model(o);
  EXPECT_GT(made.bytes, 0u);
  for (const auto& f : made.files) EXPECT_TRUE(fs::exists(f)) << f;
  return o.out;
}

std::vector<float> dequantized(const TensorView& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (int64_t r = 0; r < t.rows(); ++r) dequantize_row(t.dtype, t.row(r), v.data() + r * t.cols(), t.cols());
  return v;
}

// Canonical (interleaved-RoPE) row that HF row `r` of a q/k tensor holds.
int64_t hf_source_row(int64_t r, int hd) {
  const int64_t h = r / hd, i = r % hd;
  return h * hd + (i < hd / 2 ? 2 * i : 2 * (i - hd / 2) + 1);
}

// How far a stored value may be from the generated one: half an ulp for floats, one
// quantization step of the 32-element block for Q8_0 (amax / 127) and Q4_0 (amax / 8).
void expect_values(const ModelFile& m, uint64_t seed, bool hf_layout) {
  const int hd = m.config.head_dim;
  for (const auto& t : m.tensors) {
    const std::vector<float> got = dequantized(t);
    std::vector<float> want(got.size());
    const bool qk = t.name.find("attn_q.") != std::string::npos || t.name.find("attn_k.") != std::string::npos;
    for (int64_t r = 0; r < t.rows(); ++r)
      random_weight_row(seed, t.name, hf_layout && qk ? hf_source_row(r, hd) : r, t.cols(), want.data() + r * t.cols());
    bool any_nonzero = false;
    for (size_t i = 0; i < got.size(); ++i) {
      double tol = 0;
      const double x = want[i];
      switch (t.dtype) {
        case DType::F32: tol = 0; break;
        case DType::F16: tol = std::fabs(x) * 0x1p-11 + 0x1p-25; break;
        case DType::BF16: tol = std::fabs(x) * 0x1p-8; break;
        case DType::Q8_0:
        case DType::Q4_0: {
          const size_t b0 = i / 32 * 32;
          double amax = 0;
          for (size_t k = b0; k < b0 + 32; ++k) amax = std::max(amax, std::fabs(static_cast<double>(want[k])));
          tol = (t.dtype == DType::Q8_0 ? amax / 127 : amax / 8) * 1.01 + 1e-7;
          break;
        }
        default: FAIL() << t.name << ": make-model never writes " << dtype_name(t.dtype);
      }
      const double err = std::fabs(got[i] - x);
      ASSERT_LE(err, tol) << t.name << " element " << i << ": stored " << got[i] << ", generated " << x;
      any_nonzero |= got[i] != 0.0f;
    }
    EXPECT_TRUE(any_nonzero) << t.name << " is all zeros";
  }
}

void expect_config(const ModelConfig& got, const ModelConfig& want) {
  test::expect_same_shape(got, want);
  EXPECT_EQ(got.max_seq_len, want.max_seq_len);
  EXPECT_EQ(got.tied_embeddings, want.tied_embeddings);
}

class MakerDtypes : public ::testing::TestWithParam<DType> {};
class MakerFloatDtypes : public ::testing::TestWithParam<DType> {};

TEST_P(MakerDtypes, GgufRoundTripHoldsTheGeneratedValues) {
  const DType dt = GetParam();
  const std::string path = make(std::string("maker_gguf_") + dtype_name(dt), dt, "gguf");
  const auto m = load_gguf(path);
  expect_config(m->config, test::small_test_config());
  EXPECT_EQ(m->config.rope_layout, RopeLayout::Interleaved);
  EXPECT_EQ(m->tensors.size(), 1u + 2u * 9u + 2u);
  EXPECT_EQ(m->get("blk.0.attn_q.weight").dtype, dt);
  EXPECT_EQ(m->get("blk.0.attn_norm.weight").dtype, DType::F32) << "norm vectors stay F32 in GGUF";
  EXPECT_EQ(m->tokenizer.pieces.size(), 300u);
  expect_values(*m, 11, /*hf_layout=*/false);
}

TEST_P(MakerFloatDtypes, SafetensorsRoundTripMatchesTheGguf) {
  const DType dt = GetParam();
  const std::string dir = make(std::string("maker_st_") + dtype_name(dt), dt, "safetensors");
  const auto m = load_hf_folder(dir);
  expect_config(m->config, test::small_test_config());
  EXPECT_EQ(m->config.rope_layout, RopeLayout::RotateHalf);
  EXPECT_EQ(m->get("blk.1.ffn_norm.weight").dtype, dt);
  expect_values(*m, 11, /*hf_layout=*/true);

  // The same seed gives the same model in both formats: matrices are bit-identical (q/k rows
  // in their format's order), norms agree to the safetensors dtype's rounding.
  const auto g = load_gguf(make(std::string("maker_st_gguf_") + dtype_name(dt), dt, "gguf"));
  ASSERT_EQ(g->tensors.size(), m->tensors.size());
  for (const auto& t : g->tensors) {
    const TensorView& s = m->get(t.name);
    ASSERT_EQ(s.shape, t.shape) << t.name;
    if (t.shape.size() == 1) {
      const auto a = dequantized(t), b = dequantized(s);
      for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], std::fabs(a[i]) * 0x1p-8) << t.name;
      continue;
    }
    const bool qk = t.name.find("attn_q.") != std::string::npos || t.name.find("attn_k.") != std::string::npos;
    for (int64_t r = 0; r < t.rows(); ++r)
      ASSERT_EQ(std::memcmp(s.row(r), t.row(qk ? hf_source_row(r, m->config.head_dim) : r), t.row_bytes()), 0)
          << t.name << " row " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, MakerDtypes,
                         ::testing::Values(DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });
// Safetensors holds float types only (Q8_0 / Q4_0 are refused: RefusesRequestsItCannotHonour).
INSTANTIATE_TEST_SUITE_P(FloatDtypes, MakerFloatDtypes, ::testing::Values(DType::F32, DType::F16, DType::BF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(ModelMaker, SameSeedSameBytesOtherSeedOtherValues) {
  const std::string a = test::read_file(make("maker_seed_a", DType::F16, "gguf", 5));
  const std::string b = test::read_file(make("maker_seed_b", DType::F16, "gguf", 5));
  const std::string c = test::read_file(make("maker_seed_c", DType::F16, "gguf", 6));
  EXPECT_EQ(a, b);
  ASSERT_EQ(a.size(), c.size());
  EXPECT_NE(a, c);
}

TEST(ModelMaker, GeneratedWeightsHaveTheRequestedDistribution) {
  std::vector<float> row(100000);
  random_weight_row(3, "blk.0.ffn_up.weight", 0, static_cast<int64_t>(row.size()), row.data());
  double sum = 0, sq = 0;
  for (float x : row) sum += x, sq += static_cast<double>(x) * x;
  const double mean = sum / row.size(), sd = std::sqrt(sq / row.size() - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.001);
  EXPECT_NEAR(sd, 0.02, 0.001);
  random_weight_row(3, "blk.0.ffn_norm.weight", 0, static_cast<int64_t>(row.size()), row.data());
  sum = 0;
  for (float x : row) sum += x;
  EXPECT_NEAR(sum / row.size(), 1.0, 0.001);
  std::vector<float> other(16), again(16);
  random_weight_row(3, "blk.0.ffn_up.weight", 1, 16, other.data());
  random_weight_row(3, "blk.0.ffn_up.weight", 1, 16, again.data());
  EXPECT_EQ(other, again);
  EXPECT_NE(std::memcmp(other.data(), row.data(), 16 * 4), 0) << "rows differ";
}

TEST(ModelMaker, SyntheticVocabularyIsEmbeddedAndWrittenAsSentencePiece) {
  const auto g = load_gguf(make("maker_vocab_gguf", DType::F32, "gguf"));
  const TokenizerData& t = g->tokenizer;
  ASSERT_EQ(t.pieces.size(), 300u);
  EXPECT_EQ(t.pieces[0], "<unk>");
  EXPECT_EQ(t.pieces[1], "<s>");
  EXPECT_EQ(t.pieces[2], "</s>");
  EXPECT_EQ(t.pieces[3 + 0x41], "<0x41>");
  EXPECT_EQ(t.types[3 + 0x41], 6);
  EXPECT_EQ(t.types[1], 3);
  EXPECT_EQ(t.bos_id, 1);
  EXPECT_EQ(t.eos_id, 2);

  const std::string dir = make("maker_vocab_st", DType::F32, "safetensors");
  sentencepiece::SentencePieceProcessor sp;
  ASSERT_TRUE(sp.Load(dir + "/tokenizer.model").ok());
  ASSERT_EQ(sp.GetPieceSize(), 300);
  for (int i = 0; i < 300; ++i) EXPECT_EQ(sp.IdToPiece(i), t.pieces[i]) << i;
  EXPECT_TRUE(sp.IsByte(3));
  EXPECT_TRUE(sp.IsControl(1));
  // Byte fallback makes any text round-trip.
  const std::string text = "the tea, é 42!";
  std::vector<int> ids;
  ASSERT_TRUE(sp.Encode(text, &ids).ok());
  std::string back;
  ASSERT_TRUE(sp.Decode(ids, &back).ok());
  EXPECT_EQ(back, text);
  EXPECT_LT(ids.size(), text.size() + 2) << "merged pieces are used";
}

TEST(ModelMaker, Llama2TokenizerIsEmbeddedAndCopied) {
  const std::string tok = test::shared_path("models/llama2-tokenizer/tokenizer.model");
  ModelConfig c = test::small_test_config();
  c.dim = 32;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = 16;
  c.hidden_dim = 32;
  c.n_layers = 1;
  c.vocab_size = 32000;
  c.tied_embeddings = true;
  const auto g = load_gguf(make("maker_llama2_gguf", DType::F16, "gguf", 1, c, tok));
  const TokenizerData& t = g->tokenizer;
  ASSERT_EQ(t.pieces.size(), 32000u);
  EXPECT_EQ(t.pieces[1], "<s>");
  EXPECT_EQ(t.pieces[13], "<0x0A>");
  EXPECT_EQ(t.types[0], 2);
  EXPECT_EQ(t.types[2], 3);
  EXPECT_EQ(t.types[13], 6);
  EXPECT_EQ(t.types[1000], 1);
  EXPECT_EQ(t.model, "llama");
  EXPECT_TRUE(g->config.tied_embeddings);
  EXPECT_EQ(g->find("output.weight"), nullptr);

  const std::string dir = make("maker_llama2_st", DType::BF16, "safetensors", 1, c, tok);
  EXPECT_EQ(test::read_file(dir + "/tokenizer.model"), test::read_file(tok));
  const auto m = load_hf_folder(dir);
  EXPECT_TRUE(m->config.tied_embeddings);
  EXPECT_EQ(m->tokenizer.sp_model_path, dir + "/tokenizer.model");
}

TEST(ModelMaker, RewritingAFolderDropsTheOldShards) {
  ModelMakerOptions o;
  o.config = test::small_test_config();
  o.format = "safetensors";
  o.out = test::scratch_dir("maker_rewrite") + "/m";
  o.shard_bytes = 20000;
  o.seed = 1;
  make_model(o);
  ASSERT_TRUE(fs::exists(o.out + "/model.safetensors.index.json"));
  o.shard_bytes = uint64_t{1} << 30;
  o.seed = 2;
  const MadeModel made = make_model(o);
  EXPECT_FALSE(fs::exists(o.out + "/model.safetensors.index.json"));
  size_t n_files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(o.out)) ++n_files;
  EXPECT_EQ(n_files, made.files.size());
  const auto m = load_hf_folder(o.out);
  expect_values(*m, 2, /*hf_layout=*/true);
}

TEST(ModelMaker, PresetsHaveThePublishedShapes) {
  ModelConfig c;
  ASSERT_TRUE(model_preset("tinyllama-1.1b", &c));
  EXPECT_EQ(model_param_count(c), 1100048384u);   // TinyLlama-1.1B's published count
  ASSERT_TRUE(model_preset("llama2-7b", &c));
  EXPECT_EQ(model_param_count(c), 6738415616u);   // Llama 2 7B
  ASSERT_TRUE(model_preset("stories15m", &c));
  EXPECT_TRUE(c.tied_embeddings);
  EXPECT_EQ(c.head_dim, 48);
  for (const auto& n : model_preset_names()) {
    ASSERT_TRUE(model_preset(n, &c)) << n;
    EXPECT_NO_THROW(c.validate(n));
    if (c.architecture == "llama" && !n.starts_with("llama3")) {   // Llama 2 era
      EXPECT_EQ(c.vocab_size, 32000) << n;
    }
  }
  // The published parameter counts (tied heads counted once).
  ASSERT_TRUE(model_preset("llama3.2-1b", &c));
  EXPECT_EQ(model_param_count(c), 1235814400u);   // Llama 3.2 1B
  EXPECT_EQ(c.vocab_size, 128256);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.n_kv_heads, 8);
  EXPECT_FLOAT_EQ(c.rope_theta, 500000.f);
  EXPECT_EQ(c.rope_scaling.type, "llama3");
  EXPECT_FLOAT_EQ(c.rope_scaling.factor, 32.f);
  EXPECT_TRUE(c.tied_embeddings);
  ASSERT_TRUE(model_preset("qwen2.5-0.5b", &c));
  EXPECT_EQ(model_param_count(c), 494032768u);    // Qwen2.5-0.5B
  EXPECT_EQ(c.architecture, "qwen2");
  EXPECT_TRUE(c.attn_qkv_bias);
  EXPECT_EQ(c.n_heads, 14);
  EXPECT_EQ(c.n_kv_heads, 2);
  ASSERT_TRUE(model_preset("qwen3-0.6b", &c));
  EXPECT_EQ(c.architecture, "qwen3");
  EXPECT_TRUE(c.attn_qk_norm);
  EXPECT_EQ(c.head_dim, 128);   // not dim / heads = 64
  EXPECT_EQ(c.vocab_size, 151936);
  // Qwen3-0.6B's card: 0.44B parameters besides the (tied) embedding.
  EXPECT_EQ(model_param_count(c) - uint64_t(c.vocab_size) * c.dim, 440467456u);
  EXPECT_FALSE(model_preset("gpt-5", &c));
}

void expect_refused(const ModelMakerOptions& o, const std::vector<std::string>& parts) {
  test::expect_error_naming([&] { make_model(o); }, parts);
}

TEST(ModelMaker, RefusesRequestsItCannotHonour) {
  ModelMakerOptions o;
  o.config = test::small_test_config();
  o.out = test::scratch_dir("maker_refused") + "/m";
  o.format = "safetensors";
  o.dtype = DType::Q4_0;
  expect_refused(o, {"Q4_0", "GGUF-only"});
  o.format = "gguf";
  o.config.dim = 48;
  o.config.head_dim = 12;
  expect_refused(o, {"Q4_0", "blocks of 32", "dim is 48"});
  o.config = test::small_test_config();
  o.dtype = DType::F16;
  o.config.vocab_size = 100;
  expect_refused(o, {"259"});
  o.config = test::small_test_config();
  o.tokenizer_path = test::shared_path("models/llama2-tokenizer/tokenizer.model");
  expect_refused(o, {o.tokenizer_path, "32000 pieces", "300"});
  o.tokenizer_path = test::shared_path("models/stories260K/README.md");
  expect_refused(o, {o.tokenizer_path});
  o.tokenizer_path.clear();
  o.format = "onnx";
  expect_refused(o, {"onnx"});
}

}  // namespace
}  // namespace llmwb
