// The architectures beside Llama 2 (Llama 3.x, Qwen2/Qwen2.5, Qwen3) through the loaders and
// weights: a GGUF and a Hugging Face folder of the same random model give the same logits, the
// writers carry every variant (arch-prefixed keys, biases, Q/K norm gains, rope_freqs), every
// quantization scheme and KV type runs on them, and bad files are refused with a named reason.
// (The logits against the float64 reference: test_forward_reference.cpp; batched == sequential:
// test_engine.cpp; CUDA: tests/gpu/test_cuda_model.cpp.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_backend.h"
#include "kv/kv_cache.h"
#include "format/gguf_file.h"
#include "model/llama_model.h"
#include "model/model_describe.h"
#include "format/model_file.h"
#include "model/model_maker.h"
#include "quant/gguf_model_writer.h"
#include "quant/quant_scheme.h"
#include "quant/weight_quantizer.h"
#include "support/loader_expectations.h"
#include "support/test_support.h"

namespace llmwb {
namespace {

namespace fs = std::filesystem;

// dim 128 with 4 heads of 32 (Qwen3's: 4 heads of 48, so Q is 192 wide, not dim), GQA 2, a
// 256-wide FFN so that the k-quant schemes quantize its rows; Llama 3 untied, the Qwens tied.
ModelConfig arch_config(const std::string& arch) {
  ModelConfig c = test::family_test_config(arch, 128, 256, arch == "qwen3" ? 48 : 32, 300, 64);
  c.tied_embeddings = arch != "llama";
  c.max_seq_len = 128;
  return c;
}

std::string make(const std::string& arch, const std::string& format, DType dt = DType::F32, uint64_t seed = 5) {
  ModelMakerOptions o;
  o.config = arch_config(arch);
  o.format = format;
  o.dtype = dt;
  o.seed = seed;
  o.out = test::scratch_dir("arch_" + arch + "_" + format + "_" + dtype_name(dt)) + (format == "gguf" ? "/m.gguf" : "/m");
  make_model(o);
  return o.out;
}

std::vector<int> prompt(int vocab) {
  std::vector<int> t;
  for (int i = 0; i < 80; ++i) t.push_back((i * 37 + 11) % vocab);
  return t;
}

// Logits of every position of one prefill of `tokens` through the CPU forward pass.
std::vector<float> logits_of(const ModelFile& f, const LlamaWeights& w, const std::vector<int>& tokens,
                             KVDType kv_dtype = KVDType::F32) {
  const ModelConfig& c = f.config;
  CpuBackend be(2);
  LlamaModel model(c, w, be);
  const int bs = 16, n = static_cast<int>(tokens.size()), n_blocks = (n + bs - 1) / bs;
  KVCache kv(c.n_layers, n_blocks, bs, c.n_kv_heads, c.head_dim, kv_dtype);
  std::vector<int> table;
  for (int b = n_blocks - 1; b >= 0; --b) table.push_back(b);
  ForwardBatch batch;
  ForwardSeq s;
  s.n_tokens = n;
  s.block_table = &table;
  s.logits_row = 0;
  s.all_logits = true;
  batch.num_logit_rows = n;
  batch.tokens = tokens;
  batch.seqs.push_back(s);
  std::vector<float> out(size_t(n) * c.vocab_size);
  model.forward(batch, kv, out.data());
  return out;
}

double rel_error(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  return std::sqrt(num / den);
}

class Architectures : public ::testing::TestWithParam<std::string> {};

TEST_P(Architectures, GgufAndHfFolderOfOneModelLoadTheVariantsAndGiveTheSameLogits) {
  const std::string arch = GetParam();
  const ModelConfig want = arch_config(arch);
  auto g = load_model_file(make(arch, "gguf"));
  auto h = load_model_file(make(arch, "safetensors"));
  for (const ModelFile* m : {g.get(), h.get()}) {
    SCOPED_TRACE(m->format);
    test::expect_same_shape(m->config, want);
    EXPECT_EQ(m->config.architecture, arch);
    EXPECT_EQ(m->config.attn_qkv_bias, arch == "qwen2");
    EXPECT_EQ(m->config.attn_qk_norm, arch == "qwen3");
    EXPECT_EQ(m->config.tied_embeddings, arch != "llama");
    // Qwen's GGUF keeps Hugging Face's rotate-half q/k rows (llama.cpp's NEOX RoPE).
    EXPECT_EQ(m->config.rope_layout, m->format == "gguf" && arch == "llama" ? RopeLayout::Interleaved : RopeLayout::RotateHalf);
    const LlamaWeights w = LlamaWeights::bind(*m);
    EXPECT_EQ(w.layers[1].bq.size(), arch == "qwen2" ? size_t(want.n_heads * want.head_dim) : 0u);
    EXPECT_EQ(w.layers[1].bv.size(), arch == "qwen2" ? size_t(want.n_kv_heads * want.head_dim) : 0u);
    EXPECT_EQ(w.layers[1].k_norm.size(), arch == "qwen3" ? size_t(want.head_dim) : 0u);
  }
  EXPECT_EQ(g->metadata.at("general.architecture"), arch);
  EXPECT_EQ(g->metadata.count(arch + ".attention.key_length"), 1u);
  if (arch == "llama") {   // Llama 3 scaling: rope_freqs.weight in GGUF, rope_scaling in config.json
    EXPECT_EQ(g->config.rope_freq_factors.size(), size_t(want.head_dim / 2));
    EXPECT_EQ(h->config.rope_scaling.type, "llama3");
    EXPECT_FLOAT_EQ(h->config.rope_scaling.factor, 8.f);
    EXPECT_EQ(h->config.rope_scaling.original_max_position, 64);
    // What inspect and the model panel show for either form.
    EXPECT_EQ(describe_model(*g, nullptr).rope_scaling, "rope_freqs x1-8");
    EXPECT_EQ(describe_model(*h, nullptr).rope_scaling, "llama3 x8");
  }
  const std::vector<int> p = prompt(want.vocab_size);
  const std::vector<float> lg = logits_of(*g, LlamaWeights::bind(*g), p), lh = logits_of(*h, LlamaWeights::bind(*h), p);
  EXPECT_LT(rel_error(lg, lh), 1e-5);
}

// Every quantization scheme at load, and every KV cache type, on each architecture: the biases
// and norm gains stay f32 and the logits stay near the f32 model's (k-quants and 4-bit types
// move random weights' logits by up to ~15 %; a wrong bias, norm or rotation by O(1)).
TEST_P(Architectures, EveryQuantizationSchemeAndKvTypeRuns) {
  const std::string arch = GetParam();
  const std::string path = make(arch, "gguf");
  auto ref_file = load_model_file(path);
  const std::vector<int> p = prompt(ref_file->config.vocab_size);
  const std::vector<float> ref = logits_of(*ref_file, LlamaWeights::bind(*ref_file), p);
  for (const std::string& scheme : QuantScheme::names()) {
    SCOPED_TRACE(scheme);
    auto f = load_model_file(path);
    LlamaWeights w = LlamaWeights::bind(*f);
    const std::vector<float> bq = w.layers[0].bq, qn = w.layers[0].q_norm;
    quantize_weights_in_place(*f, w, scheme);
    EXPECT_EQ(w.layers[0].bq, bq);
    EXPECT_EQ(w.layers[0].q_norm, qn);
    EXPECT_NE(w.layers[0].wq.dtype, DType::F32);
    EXPECT_LT(rel_error(logits_of(*f, w, p), ref), scheme.find('4') != std::string::npos ? 0.3 : 0.1);
  }
  for (KVDType kv : {KVDType::F16, KVDType::INT8}) {
    SCOPED_TRACE(kv_dtype_name(kv));
    EXPECT_LT(rel_error(logits_of(*ref_file, LlamaWeights::bind(*ref_file), p, kv), ref), 2e-2);
  }
}

// llmwb-cli quantize's writer: a model quantized in memory, written as GGUF (the architecture's
// keys, its q/k row order, the biases / norms / rope_freqs), loads back to the same logits;
// from a Hugging Face folder too (a Llama's q/k rows are permuted to GGUF's order on the way,
// a Qwen's kept, and Llama 3 scaling becomes rope_freqs.weight).
TEST_P(Architectures, QuantizedGgufWrittenFromEitherFormatLoadsToTheSameLogits) {
  const std::string arch = GetParam();
  for (const std::string format : {"gguf", "safetensors"}) {
    SCOPED_TRACE(format);
    auto f = load_model_file(make(arch, format));
    LlamaWeights w = LlamaWeights::bind(*f);
    quantize_weights_in_place(*f, w, "q8_0");
    const std::vector<float> in_memory = logits_of(*f, w, prompt(f->config.vocab_size));
    const std::string out = test::scratch_dir("arch_written_" + arch + "_" + format) + "/q.gguf";
    write_model_gguf(*f, out, "q8_0");
    auto back = load_model_file(out);
    EXPECT_EQ(back->config.architecture, arch);
    EXPECT_LT(rel_error(logits_of(*back, LlamaWeights::bind(*back), prompt(f->config.vocab_size)), in_memory), 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(Families, Architectures, ::testing::Values("llama", "qwen2", "qwen3"),
                         [](const auto& info) { return info.param; });

// A copy of the GGUF at `path` without tensor `drop` (or with `arch` in general.architecture).
std::string rewritten_gguf(const std::string& path, const std::string& drop, const std::string& name) {
  auto f = load_model_file(path);
  std::erase_if(f->tensors, [&](const TensorView& t) { return t.name == drop; });
  const std::string out = test::scratch_dir("arch_bad_" + name) + "/m.gguf";
  write_model_gguf(*f, out, "");
  return out;
}

TEST(ArchitectureErrors, UnsupportedGgufArchitectureNamesItselfAndTheSupportedOnes) {
  std::string bytes = test::read_file(make("qwen2", "gguf"));
  // general.architecture's value "qwen2" -> "phi_3" (same length; the qwen2.* keys stay).
  const size_t key = bytes.find("general.architecture");
  ASSERT_NE(key, std::string::npos);
  const size_t value = bytes.find("qwen2", key);
  std::memcpy(bytes.data() + value, "phi_3", 5);
  const std::string path = test::scratch_dir("arch_bad_gguf_arch") + "/m.gguf";
  test::write_file(path, bytes);
  test::expect_error_naming([&] { load_model_file(path); },
                            {path, "general.architecture", "'phi_3'", "llama, mistral, qwen2, qwen3"});
}

TEST(ArchitectureErrors, UnsupportedHfModelTypeNamesItselfAndTheSupportedOnes) {
  const std::string dir = make("qwen3", "safetensors");
  nlohmann::json j = nlohmann::json::parse(test::read_file(dir + "/config.json"));
  j["model_type"] = "gemma3";
  test::write_file(dir + "/config.json", j.dump());
  test::expect_error_naming([&] { load_model_file(dir); }, {"config.json", "model_type", "gemma3", "qwen2, qwen3"});
  j["model_type"] = "qwen3";
  j["attention_bias"] = true;   // would add an o_proj bias this graph has no place for
  test::write_file(dir + "/config.json", j.dump());
  test::expect_error_naming([&] { load_model_file(dir); }, {"config.json", "attention_bias", "not supported"});
}

TEST(ArchitectureErrors, MissingBiasOrNormTensorInGgufIsNamed) {
  const std::string q2 = make("qwen2", "gguf"), q3 = make("qwen3", "gguf");
  for (auto [path, tensor] : {std::pair{q2, "blk.1.attn_k.bias"}, {q2, "blk.0.attn_v.bias"},
                              {q3, "blk.1.attn_q_norm.weight"}, {q3, "blk.0.attn_k_norm.weight"}}) {
    SCOPED_TRACE(tensor);
    const std::string bad = rewritten_gguf(path, tensor, std::string(tensor));
    test::expect_error_naming(
        [&] {
          auto f = load_model_file(bad);
          LlamaWeights::bind(*f);
        },
        {bad, std::string("missing tensor '") + tensor + "'"});
  }
}

TEST(ArchitectureErrors, WrongBiasOrNormShapeIsNamed) {
  auto f = load_model_file(make("qwen3", "gguf"));
  for (TensorView& t : f->tensors)
    if (t.name == "blk.0.attn_k_norm.weight") t.shape = {t.shape[0] / 2}, t.nbytes /= 2;
  test::expect_error_naming([&] { LlamaWeights::bind(*f); }, {"blk.0.attn_k_norm.weight", "{24}", "expected {48}"});
}

TEST(ArchitectureErrors, MissingBiasOrNormTensorInHfFolderIsNamed) {
  for (auto [arch, tensor, canon] :
       {std::tuple{"qwen2", "model.layers.1.self_attn.q_proj.bias", "blk.1.attn_q.bias"},
        {"qwen3", "model.layers.0.self_attn.k_norm.weight", "blk.0.attn_k_norm.weight"}}) {
    SCOPED_TRACE(tensor);
    const std::string dir = make(arch, "safetensors");
    test::rewrite_safetensors(dir, tensor);
    test::expect_error_naming([&] { load_model_file(dir); },
                              {"model.safetensors", std::string("missing tensor '") + tensor + "'", canon});
  }
}

}  // namespace
}  // namespace llmwb
