// The engine's forward pass (paged KV, batched, chunked prefill) against a float64 reference,
// on random models of several shapes and on the real stories260K weights.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "backend/cpu/cpu_backend.h"
#include "kv/kv_cache.h"
#include "model/llama_model.h"
#include "format/model_file.h"
#include "model/model_maker.h"
#include "support/reference_forward.h"
#include "support/test_support.h"

using namespace llmwb;

namespace {

double rel_err(const float* got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

struct Shape {
  const char* name;
  int dim, hidden, layers, heads, kv_heads, vocab;
};

// Runs `tokens` through the engine's model as: a prefill chunk of `first_chunk` tokens, then
// one token per step, with a scrambled block table of 4-token blocks; checks every produced
// logits row against the reference. A second sequence runs in the same batches, offset.
void check_against_reference(const ModelFile& file, const std::vector<int>& tokens, int first_chunk, double tol) {
  CpuBackend be(2);
  LlamaModel model(file.config, LlamaWeights::bind(file), be);
  const int bs = 4, n = static_cast<int>(tokens.size());
  const int blocks_per_seq = (n + bs - 1) / bs;
  KVCache kv(file.config.n_layers, 2 * blocks_per_seq, bs, file.config.n_kv_heads, file.config.head_dim);
  // Interleave and reverse the two sequences' blocks so that nothing is contiguous.
  std::vector<int> table_a, table_b;
  for (int i = 0; i < blocks_per_seq; ++i) {
    table_a.push_back(2 * (blocks_per_seq - 1 - i));
    table_b.push_back(2 * i + 1);
  }
  test::ReferenceLlama ref_a(file), ref_b(file);
  std::vector<float> logits;
  const int vocab = file.config.vocab_size;
  int done_a = 0, done_b = 0;
  // Sequence b lags two steps behind a, and its tokens are a's reversed.
  std::vector<int> tokens_b(tokens.rbegin(), tokens.rend());
  for (int stepi = 0; done_a < n || done_b < n; ++stepi) {
    ForwardBatch batch;
    auto add = [&](const std::vector<int>& toks, int& done, const std::vector<int>& table, int count) {
      ForwardSeq s;
      s.first = static_cast<int>(batch.tokens.size());
      s.n_tokens = count;
      s.start_pos = done;
      s.block_table = &table;
      s.logits_row = batch.num_logit_rows++;
      batch.tokens.insert(batch.tokens.end(), toks.begin() + done, toks.begin() + done + count);
      batch.seqs.push_back(s);
    };
    int na = 0, nb = 0;
    if (done_a < n) na = done_a == 0 ? first_chunk : 1;
    if (stepi >= 2 && done_b < n) nb = done_b == 0 ? first_chunk : 1;
    if (na) add(tokens, done_a, table_a, na);
    if (nb) add(tokens_b, done_b, table_b, nb);
    if (batch.seqs.empty()) continue;
    logits.assign(static_cast<size_t>(batch.num_logit_rows) * vocab, 0.f);
    model.forward(batch, kv, logits.data());
    int row = 0;
    if (na) {
      std::vector<double> want;
      for (int i = 0; i < na; ++i) want = ref_a.step(tokens[static_cast<size_t>(done_a + i)]);
      done_a += na;
      EXPECT_LT(rel_err(logits.data() + static_cast<size_t>(row++) * vocab, want), tol) << "seq a, position " << done_a - 1;
    }
    if (nb) {
      std::vector<double> want;
      for (int i = 0; i < nb; ++i) want = ref_b.step(tokens_b[static_cast<size_t>(done_b + i)]);
      done_b += nb;
      EXPECT_LT(rel_err(logits.data() + static_cast<size_t>(row) * vocab, want), tol) << "seq b, position " << done_b - 1;
    }
  }
}

std::vector<int> random_tokens(int n, int vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int> t{1};
  while (static_cast<int>(t.size()) < n) t.push_back(3 + static_cast<int>(rng() % static_cast<uint32_t>(vocab - 3)));
  return t;
}

class RandomModelShapes : public ::testing::TestWithParam<std::tuple<Shape, std::string, DType>> {};

// A random model of `shape` written by make_model; returns its path.
std::string make_shape_model(const Shape& shape, const std::string& format, DType dtype, uint64_t seed) {
  ModelMakerOptions o;
  o.config.name = shape.name;
  o.config.dim = shape.dim;
  o.config.hidden_dim = shape.hidden;
  o.config.n_layers = shape.layers;
  o.config.n_heads = shape.heads;
  o.config.n_kv_heads = shape.kv_heads;
  o.config.head_dim = shape.dim / shape.heads;
  o.config.vocab_size = shape.vocab;
  o.config.max_seq_len = 64;
  o.config.rope_theta = 10000.f;
  o.dtype = dtype;
  o.format = format;
  o.seed = seed;
  const std::string dir = test::scratch_dir(std::string("fwdref_") + shape.name + "_" + format + "_" + dtype_name(dtype));
  o.out = dir + (format == "gguf" ? "/model.gguf" : "/model");
  make_model(o);
  return o.out;
}

TEST_P(RandomModelShapes, LogitsMatchFloat64Reference) {
  const auto& [shape, format, dtype] = GetParam();
  auto file = load_model_file(make_shape_model(shape, format, dtype, 1234));
  check_against_reference(*file, random_tokens(19, shape.vocab, 7), 6, 1e-4);
}

const Shape kShapes[] = {
    {"mha", 64, 96, 2, 4, 4, 300},
    {"gqa", 96, 160, 2, 6, 2, 320},
    {"mqa", 64, 112, 2, 4, 1, 290},
    {"odd", 72, 100, 3, 3, 1, 333},
};

INSTANTIATE_TEST_SUITE_P(Shapes, RandomModelShapes,
                         ::testing::Combine(::testing::ValuesIn(kShapes), ::testing::Values("gguf", "safetensors"),
                                            ::testing::Values(DType::F32, DType::F16, DType::BF16)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" + std::get<1>(info.param) + "_" +
                                  dtype_name(std::get<2>(info.param));
                         });

// The architectures' variants, each on a random model written by make_model as GGUF and as a
// Hugging Face folder: Qwen2's Q/K/V biases, Qwen3's per-head Q/K RMSNorm (gains 1 +
// normal(0, 0.25)) with a head size that is not dim / heads, and Llama 3's RoPE scaling over a
// context past original_max_position (32 here, so that 60 tokens reach the scaled
// frequencies; a GGUF carries it as rope_freqs.weight, a folder as config.json's rope_scaling).
struct Variant {
  const char* name;
  const char* arch;
  int dim, hidden, heads, kv_heads, head_dim, vocab, n_tokens;
  bool llama3_scaling;
};

void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

ModelConfig variant_config(const Variant& v) {
  ModelConfig c;
  c.name = v.name;
  c.architecture = v.arch;
  c.dim = v.dim;
  c.hidden_dim = v.hidden;
  c.n_layers = 2;
  c.n_heads = v.heads;
  c.n_kv_heads = v.kv_heads;
  c.head_dim = v.head_dim;
  c.vocab_size = v.vocab;
  c.max_seq_len = 128;
  c.rope_theta = 10000.f;
  c.norm_eps = 1e-6f;
  c.tied_embeddings = true;
  if (v.llama3_scaling) {
    c.rope_scaling.type = "llama3";
    c.rope_scaling.factor = 8.f;
    c.rope_scaling.low_freq_factor = 1.f;
    c.rope_scaling.high_freq_factor = 4.f;
    c.rope_scaling.original_max_position = 32;
  }
  return c;
}

std::string make_variant_model(const Variant& v, const std::string& format, DType dtype) {
  ModelMakerOptions o;
  o.config = variant_config(v);
  o.dtype = dtype;
  o.format = format;
  o.seed = 4321;
  const std::string dir = test::scratch_dir(std::string("fwdref_") + v.name + "_" + format + "_" + dtype_name(dtype));
  o.out = dir + (format == "gguf" ? "/model.gguf" : "/model");
  make_model(o);
  return o.out;
}

const Variant kVariants[] = {
    {"qwen2_bias", "qwen2", 64, 96, 4, 2, 16, 300, 19, false},
    {"qwen3_qknorm_hd32", "qwen3", 64, 112, 4, 2, 32, 310, 19, false},
    {"llama3_scaled", "llama", 96, 160, 6, 2, 16, 320, 60, true},
};

class ArchitectureVariants : public ::testing::TestWithParam<std::tuple<Variant, std::string>> {};

TEST_P(ArchitectureVariants, LogitsMatchFloat64Reference) {
  const auto& [variant, format] = GetParam();
  auto file = load_model_file(make_variant_model(variant, format, DType::F32));
  const ModelConfig& c = file->config;
  EXPECT_EQ(c.architecture, variant.arch);
  EXPECT_EQ(c.head_dim, variant.head_dim);
  EXPECT_EQ(c.attn_qkv_bias, std::string(variant.arch) == "qwen2");
  EXPECT_EQ(c.attn_qk_norm, std::string(variant.arch) == "qwen3");
  check_against_reference(*file, random_tokens(variant.n_tokens, variant.vocab, 7), 6, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Architectures, ArchitectureVariants,
                         ::testing::Combine(::testing::ValuesIn(kVariants), ::testing::Values("gguf", "safetensors")),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" + std::get<1>(info.param);
                         });

// The scaled frequencies do matter at that context: the same weights without the scaling give
// logits far from the reference by the last positions (so the test above could tell).
TEST(ForwardReference, Llama3RopeScalingChangesTheLogitsPastTheOriginalContext) {
  const Variant& v = kVariants[2];
  auto file = load_model_file(make_variant_model(v, "gguf", DType::F32));
  ASSERT_EQ(file->config.rope_freq_factors.size(), size_t(v.head_dim / 2));
  ModelConfig plain = file->config;
  plain.rope_freq_factors.clear();
  CpuBackend be(2);
  LlamaModel model(plain, LlamaWeights::bind(*file), be);
  const std::vector<int> tokens = random_tokens(v.n_tokens, v.vocab, 7);
  const int bs = 4, n_blocks = (v.n_tokens + bs - 1) / bs;
  KVCache kv(plain.n_layers, n_blocks, bs, plain.n_kv_heads, plain.head_dim);
  std::vector<int> table(static_cast<size_t>(n_blocks));
  for (int i = 0; i < n_blocks; ++i) table[static_cast<size_t>(i)] = i;
  ForwardBatch batch;
  ForwardSeq s;
  s.n_tokens = v.n_tokens;
  s.block_table = &table;
  s.logits_row = 0;
  batch.num_logit_rows = 1;
  batch.tokens = tokens;
  batch.seqs.push_back(s);
  std::vector<float> logits(static_cast<size_t>(v.vocab));
  model.forward(batch, kv, logits.data());
  test::ReferenceLlama ref(*file);
  std::vector<double> want;
  for (int t : tokens) want = ref.step(t);
  EXPECT_GT(rel_err(logits.data(), want), 1e-2);
  // The GGUF's rope_freqs.weight (what make_model wrote) holds the divisors of Llama 3's
  // formula, as the reference computes it from the folder's config.json rope_scaling.
  auto folder = load_model_file(make_variant_model(v, "safetensors", DType::F32));
  const test::ReferenceLlama from_config(*folder);
  for (int i = 0; i < v.head_dim / 2; ++i) {
    const double base = std::pow(10000.0, -2.0 * i / v.head_dim);
    EXPECT_NEAR(base / file->config.rope_freq_factors[size_t(i)], from_config.inv_freq()[size_t(i)], 1e-7 * base) << i;
  }
}

TEST(ForwardReference, Stories260KAllFormatsMatchFloat64Reference) {
  for (const char* rel : {"models/stories260K/stories260K.bin", "models/stories260K/stories260K.gguf",
                          "models/stories260K/hf"}) {
    SCOPED_TRACE(rel);
    auto file = load_model_file(test::shared_path(rel));
    check_against_reference(*file, random_tokens(40, 512, 3), 17, 1e-4);
  }
}

}  // namespace

namespace {

// The last layer computes past its K/V only the rows that get logits. Against the same batch
// run with every row computed (recording the last layer's attention turns the trimming off):
// the same logits bitwise and the same K/V, for a chunk without logits, one asking for every
// row's logits and one for its last row only, mixed in one batch.
TEST(ForwardReference, LastLayerComputesOnlyLogitRowsWithTheSameResults) {
  auto file = load_model_file(make_shape_model({"trim", 96, 160, 3, 6, 2, 300}, "gguf", DType::F32, 99));
  const ModelConfig& c = file->config;
  const int bs = 4;
  const std::vector<int> tokens = random_tokens(30, c.vocab_size, 11);
  const std::vector<int> table_a{0, 1, 2}, table_b{3, 4, 5, 6}, table_c{7, 8, 9};
  ForwardBatch batch;
  auto add = [&](const std::vector<int>* table, int from, int count, int logits, bool all) {
    ForwardSeq s;
    s.first = static_cast<int>(batch.tokens.size());
    s.n_tokens = count;
    s.start_pos = 0;
    s.block_table = table;
    s.all_logits = all;
    if (logits) {
      s.logits_row = batch.num_logit_rows;
      batch.num_logit_rows += logits;
    }
    batch.tokens.insert(batch.tokens.end(), tokens.begin() + from, tokens.begin() + from + count);
    batch.seqs.push_back(s);
  };
  add(&table_a, 0, 9, 0, false);     // a prefill chunk: no logits
  add(&table_b, 5, 13, 13, true);    // every row's logits
  add(&table_c, 12, 10, 1, false);   // the last row's
  std::vector<float> got[2];
  std::vector<float> k_after[2], v_after[2];
  for (int trimmed = 0; trimmed < 2; ++trimmed) {
    CpuBackend be(2);
    LlamaModel model(c, LlamaWeights::bind(*file), be);
    KVCache kv(c.n_layers, 10, bs, c.n_kv_heads, c.head_dim);
    AttentionRecord record;
    got[trimmed].assign(static_cast<size_t>(batch.num_logit_rows) * c.vocab_size, 0.f);
    if (trimmed) model.forward(batch, kv, got[trimmed].data());
    else model.forward(batch, kv, got[trimmed].data(), c.n_layers - 1, &record);
    std::vector<float> kk(static_cast<size_t>(kv.kv_dim())), vv(kk.size());
    for (int l = 0; l < c.n_layers; ++l)
      for (const ForwardSeq& s : batch.seqs)
        for (int pos = 0; pos < s.n_tokens; ++pos) {   // the slots written (the rest is unset)
          kv.load(l, int64_t((*s.block_table)[static_cast<size_t>(pos / bs)]) * bs + pos % bs, kk.data(), vv.data());
          k_after[trimmed].insert(k_after[trimmed].end(), kk.begin(), kk.end());
          v_after[trimmed].insert(v_after[trimmed].end(), vv.begin(), vv.end());
        }
  }
  EXPECT_EQ(got[0], got[1]);
  EXPECT_EQ(k_after[0], k_after[1]);
  EXPECT_EQ(v_after[0], v_after[1]);
  for (float x : got[1]) ASSERT_TRUE(std::isfinite(x));
}

}  // namespace
