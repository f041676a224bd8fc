// The CUDA runner end to end: logits against the CPU forward pass on random models of every
// weight format (prefill through cuBLAS, decode through the GEMV, GQA, paged K/V) and with f16
// and int8 K/V pools on both backends, stories260K's published greedy text through --backend
// cuda, and the engine's scheduler on CUDA (batched == sequential, copy-on-write through
// parallel samples, prefix caching, with f32, f16 and int8 K/V; block accounting, attention
// capture).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "backend/cpu/cpu_backend.h"
#include "runner/cuda/cuda_model.h"
#include "runner/device_model.h"
#include "gpu_test.h"
#include "kv/kv_cache.h"
#include "llmwb/engine.h"
#include "llmwb/llm.h"
#include "model/llama_model.h"
#include "format/model_file.h"
#include "model/model_maker.h"
#include "sample/rng.h"
#include "sample/sampler.h"
#include "support/test_support.h"

using namespace llmwb;
using namespace llmwb::test;

namespace {

std::string make_random_model(DType dtype, int dim, int hidden, int heads, int kv_heads, int vocab, uint64_t seed) {
  return make_test_model("gpu_model", "gpu-random-" + std::to_string(dim), dim, hidden, heads, kv_heads, vocab, dtype,
                         seed, 512);
}

// Two sequences on two runners step by step: a 20-token and a 3-token prefill in one batch,
// then 6 decode steps of both; returns the worst relative logits error over all steps. Both
// runners keep K/V as `kv_dtype`.
double max_logits_error(const std::string& path, KVDType kv_dtype = KVDType::F32) {
  auto file = load_model_file(path);
  const ModelConfig& c = file->config;
  LlamaWeights w = LlamaWeights::bind(*file);
  auto gpu = make_cuda_model(c, w);
  const int bs = 16, num_blocks = 16;
  gpu->allocate_kv(num_blocks, bs, kv_dtype);
  CpuBackend be(2);
  LlamaModel cpu(c, std::move(w), be);
  KVCache kv(c.n_layers, num_blocks, bs, c.n_kv_heads, c.head_dim, kv_dtype);
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_int_distribution<int> tok(0, c.vocab_size - 1);
  // Block tables out of order: sequence 0 gets blocks 9, 2, 14; sequence 1 gets 5, 11.
  const std::vector<std::vector<int>> tables{{9, 2, 14}, {5, 11}};
  std::vector<std::vector<int>> seq_tokens(2);
  for (int i = 0; i < 20; ++i) seq_tokens[0].push_back(tok(rng));
  for (int i = 0; i < 3; ++i) seq_tokens[1].push_back(tok(rng));
  std::vector<int> computed{0, 0};
  double worst = 0;
  for (int step = 0; step < 7; ++step) {
    ForwardBatch b;
    for (int s = 0; s < 2; ++s) {
      ForwardSeq fs;
      fs.first = static_cast<int>(b.tokens.size());
      fs.start_pos = computed[size_t(s)];
      fs.n_tokens = static_cast<int>(seq_tokens[size_t(s)].size()) - computed[size_t(s)];
      fs.decode = step > 0;   // as the scheduler marks a decode
      fs.block_table = &tables[size_t(s)];
      fs.logits_row = b.num_logit_rows++;
      b.tokens.insert(b.tokens.end(), seq_tokens[size_t(s)].begin() + fs.start_pos, seq_tokens[size_t(s)].end());
      b.seqs.push_back(fs);
    }
    std::vector<float> lc(size_t(b.num_logit_rows) * c.vocab_size), lg(lc.size(), NAN);
    cpu.forward(b, kv, lc.data());
    gpu->forward(b, lg.data(), -1, nullptr);
    worst = std::max(worst, rel_error(lg, lc));
    for (int s = 0; s < 2; ++s) {
      computed[size_t(s)] = static_cast<int>(seq_tokens[size_t(s)].size());
      seq_tokens[size_t(s)].push_back(tok(rng));
    }
  }
  return worst;
}

TEST(CudaModel, LogitsMatchTheCpuForwardPassForEveryWeightFormat) {
  LLMWB_REQUIRE_GPU();
  // dim 256 / 8 heads / 2 kv heads: head_dim 32, GQA group 4 (the tiled attention kernel).
  // INT8_ASYM_ROW has no GPU kernel and is converted to F16 on upload. For the quantized formats
  // the CPU reference itself is approximate: it multiplies int8-quantized activations (blocks of
  // 32, as llama.cpp), the GPU fp32 ones, which moves these logits by 1.0-1.25 % (measured under
  // the emulator, tests/cuda_emu); the kernels' own tests check each format at 1e-5. A wiring
  // error (a wrong scale, row or position) moves them by O(1).
  const std::map<DType, double> tol{{DType::F32, 1e-4},     {DType::F16, 5e-3},      {DType::BF16, 2e-2},
                                    {DType::Q8_0, 2e-2},    {DType::Q4_0, 2e-2},     {DType::INT8_ROW, 2e-2},
                                    {DType::INT4_G32, 2e-2}, {DType::INT4_G128, 2e-2}, {DType::INT8_ASYM_ROW, 2e-2}};
  for (auto [t, limit] : tol) {
    const double err = max_logits_error(make_random_model(t, 256, 512, 8, 2, 700, 7));
    EXPECT_LT(err, limit) << dtype_name(t);
  }
  // head_dim 64, multi-head.
  EXPECT_LT(max_logits_error(make_random_model(DType::F32, 256, 384, 4, 4, 300, 8)), 1e-4);
}

// The architectures' variants on the device: Qwen2's Q/K/V biases, Qwen3's per-head Q/K norm
// with head_dim 128 at dim 256 / 4 heads (Q wider than dim), Llama 3's rope scaling (original
// context 16, so the 26 positions reach the scaled frequencies), each against the CPU forward
// pass (prefill through cuBLAS, decode through the GEMV, the trimmed last layer), in F32 and
// Q8_0, with f32 and int8 K/V.
TEST(CudaModel, QwenAndLlama3VariantsMatchTheCpuForwardPass) {
  LLMWB_REQUIRE_GPU();
  for (const std::string arch : {"qwen2", "qwen3", "llama"}) {
    for (DType dt : {DType::F32, DType::Q8_0}) {
      SCOPED_TRACE(arch + " " + dtype_name(dt));
      ModelMakerOptions o;
      o.config = family_test_config(arch, 256, 512, arch == "qwen3" ? 128 : 64, 600);
      o.dtype = dt;
      o.seed = 17;
      o.out = scratch_dir("gpu_arch_" + arch + "_" + dtype_name(dt)) + "/m.gguf";
      make_model(o);
      // Q8_0: the CPU multiplies int8-quantized activations, the GPU fp32 ones (see above).
      EXPECT_LT(max_logits_error(o.out), dt == DType::F32 ? 1e-4 : 2e-2);
      if (dt == DType::F32) {
        EXPECT_LT(max_logits_error(o.out, KVDType::INT8), 2e-2);
      }
    }
  }
}

// The logits of one 24-token prefill on the CUDA backend with a `kv_dtype` pool against an f32
// pool (relative error): how far the pool's rounding moves them.
double pool_vs_f32_logits(const std::string& path, KVDType kv_dtype) {
  auto file = load_model_file(path);
  const LlamaWeights w = LlamaWeights::bind(*file);
  cuda::CudaModel f32(file->config, w), other(file->config, w);
  f32.allocate_kv(4, 16, KVDType::F32);
  other.allocate_kv(4, 16, kv_dtype);
  const std::vector<int> table{2, 0};
  ForwardBatch b;
  ForwardSeq fs;
  fs.n_tokens = 24;
  fs.block_table = &table;
  fs.logits_row = b.num_logit_rows++;
  for (int i = 0; i < 24; ++i) b.tokens.push_back((i * 53 + 5) % file->config.vocab_size);
  b.seqs.push_back(fs);
  std::vector<float> lf(size_t(file->config.vocab_size), NAN), lo(lf.size(), NAN);
  f32.forward(b, lf.data(), -1, nullptr);
  other.forward(b, lo.data(), -1, nullptr);
  return rel_error(lo, lf);
}

// --kv-dtype int8: both backends quantize each (slot, kv head) the same way (the kernels' test
// checks the bytes for the same input). Here K and V themselves come from two forward passes
// that agree to ~1e-7, so now and then an element lies on a rounding boundary and its code
// differs by one step (|max| / 127): typically the logits agree to ~6e-7, after such a flip to
// ~1e-3 (8.5e-4 seen). A pool read with the wrong layer, slot or scale is off by far more, and
// the int8 pool is not the f32 one: int8 vs f32 K/V move these logits by 5e-3 to 9e-3.
TEST(CudaModel, Int8KvLogitsMatchTheCpusInt8Kv) {
  LLMWB_REQUIRE_GPU();
  for (auto [heads, kv_heads] : {std::pair{8, 2}, std::pair{4, 4}}) {   // the tiled kernel; MHA decode kernel
    const std::string m = make_random_model(DType::F32, 256, 512, heads, kv_heads, 700, 9);
    EXPECT_LT(max_logits_error(m, KVDType::INT8), 3e-3) << heads << "/" << kv_heads << " heads";
    const double q = pool_vs_f32_logits(m, KVDType::INT8);
    EXPECT_GT(q, 1e-3) << "int8 K/V gave the f32 logits";
    EXPECT_LT(q, 5e-2);
  }
}

// --kv-dtype f16: both backends round each element the same way (kv_half; the kernels' test
// checks the bits for the same input). K and V themselves come from two forward passes that
// agree to ~1e-7, and with a rounding step of only 2^-11 of an element some land on the other
// side of a boundary in every run (measured once under the emulator for a 24-token prefill:
// layer 0, 5 of 3072 halves at 8/2 heads and 16 of 12288 at 4/4, each one step apart; layer 1,
// fed by layer 0's attention over them, 77 and 307). So the logits agree to 3e-6 .. 7e-5
// (16 emulated runs; f32 K/V: 6.5e-7), against 1.9e-4 .. 3.2e-4 between the f16 and the f32
// pool, which a pool read with the wrong layer, slot or element size would exceed by far.
TEST(CudaModel, F16KvLogitsMatchTheCpusF16Kv) {
  LLMWB_REQUIRE_GPU();
  for (auto [heads, kv_heads] : {std::pair{8, 2}, std::pair{4, 4}}) {   // the tiled kernel; MHA decode kernel
    const std::string m = make_random_model(DType::F32, 256, 512, heads, kv_heads, 700, 9);
    const double e = max_logits_error(m, KVDType::F16);
    std::printf("f16 K/V, %d/%d heads: CUDA vs CPU logits %.3g\n", heads, kv_heads, e);
    EXPECT_LT(e, 1e-3) << heads << "/" << kv_heads << " heads";
    const double q = pool_vs_f32_logits(m, KVDType::F16);
    std::printf("f16 K/V, %d/%d heads: f16 vs f32 pool logits %.3g\n", heads, kv_heads, q);
    EXPECT_GT(q, 1e-6) << "f16 K/V gave the f32 logits";
    EXPECT_LT(q, 5e-3);
  }
}

// Decode steps replayed from CUDA graphs (padded to a power-of-two batch, attention split for
// a context bucket) give the logits of eager launches: 3 sequences (GEMV path, bucket 4) and
// 11 (cuBLAS path, bucket 16), over contexts that cross a bucket boundary (256 -> 512).
TEST(CudaModel, GraphReplayedDecodeStepsMatchEagerLaunches) {
  LLMWB_REQUIRE_GPU();
  for (DType t : {DType::F16, DType::Q8_0}) {
    auto file = load_model_file(make_random_model(t, 256, 512, 8, 2, 700, 11));
    const ModelConfig& c = file->config;
    const LlamaWeights w = LlamaWeights::bind(*file);
    for (int n_seqs : {3, 11}) {
      cuda::CudaModel graphs(c, w), eager(c, w);
      graphs.set_use_graphs(true);
      eager.set_use_graphs(false);
      const int bs = 16, per_seq = 20;   // 320 positions per sequence
      graphs.allocate_kv(n_seqs * per_seq, bs);
      eager.allocate_kv(n_seqs * per_seq, bs);
      std::vector<std::vector<int>> tables(static_cast<size_t>(n_seqs));
      for (int s = 0; s < n_seqs; ++s)
        for (int b = 0; b < per_seq; ++b) tables[size_t(s)].push_back(b * n_seqs + s);
      std::mt19937_64 rng(std::random_device{}());
      std::uniform_int_distribution<int> tok(0, c.vocab_size - 1);
      // Prefill 250 tokens each (eager on both), then 12 decode steps reaching position 261.
      int pos = 0;
      for (int step = 0; step < 13; ++step) {
        const int n_new = step == 0 ? 250 : 1;
        ForwardBatch b;
        for (int s = 0; s < n_seqs; ++s) {
          ForwardSeq fs;
          fs.first = static_cast<int>(b.tokens.size());
          fs.start_pos = pos;
          fs.n_tokens = n_new;
          fs.decode = n_new == 1;   // as the scheduler marks a decode
          fs.block_table = &tables[size_t(s)];
          fs.logits_row = b.num_logit_rows++;
          for (int i = 0; i < n_new; ++i) b.tokens.push_back(tok(rng));
          b.seqs.push_back(fs);
        }
        std::vector<float> lg(size_t(n_seqs) * c.vocab_size, NAN), le(lg.size(), NAN);
        graphs.forward(b, lg.data(), -1, nullptr);
        eager.forward(b, le.data(), -1, nullptr);
        // A graph's steps run as the bucket says (padded batch, the context bucket's attention
        // splits), eager ones as the batch is: on the GEMV path (fp32 activations) the different
        // split sums agree to ~1e-7, on the cuBLAS path the activations are rounded to half and
        // those last-bit differences flip roundings (~1e-4 seen, emulator). A replay that read stale
        // metadata (tokens, positions, block tables) would be off by O(1).
        const double limit = n_seqs <= cuda::kGemvMaxRows ? 1e-5 : 1e-3;
        ASSERT_LT(rel_error(lg, le), limit) << dtype_name(t) << ", " << n_seqs << " sequences, step " << step;
        pos += n_new;
      }
      EXPECT_TRUE(graphs.use_graphs()) << "capture failed and graphs were turned off";
      EXPECT_GE(graphs.num_graphs(), 2u) << "one graph per context bucket (256, 512)";
      EXPECT_EQ(eager.num_graphs(), 0u);
    }
  }
}

std::string reference_text() {
  std::string t = read_file(shared_path("models/stories260K/greedy-from-bos.txt"));
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

EngineConfig stories_config(const std::string& backend, const std::string& kv_dtype = "f32") {
  EngineConfig c;
  c.kv_dtype = kv_dtype;
  c.model = shared_path("models/stories260K/stories260K.gguf");
  c.backend = backend;
  c.threads = 2;
  c.max_model_len = 512;
  return c;
}

TEST(CudaModel, Stories260KGreedyFromBosMatchesThePublishedText) {
  LLMWB_REQUIRE_GPU();
  LLM llm(stories_config("cuda"));
  const std::string& where = llm.engine().model_info().backend;   // the GUI's Model panel shows it
  EXPECT_EQ(where.rfind("cuda: ", 0), 0u) << where;
  EXPECT_NE(where.find(" SMs, "), std::string::npos) << where;
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 256;
  auto out = llm.generate({""}, p);
  ASSERT_TRUE(out[0].error.empty()) << out[0].error;
  std::string t = out[0].outputs[0].text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  EXPECT_EQ(t, reference_text());
}

// A prompt prefilled in two chunks, the first computing no logits (the trimmed last layer then
// writes only K/V), gives the logits of one whole prefill.
TEST(CudaModel, AChunkWithoutLogitsWritesTheKvOfAWholePrefill) {
  LLMWB_REQUIRE_GPU();
  auto file = load_model_file(make_random_model(DType::F32, 256, 512, 8, 2, 700, 31));
  const ModelConfig& c = file->config;
  const LlamaWeights w = LlamaWeights::bind(*file);
  cuda::CudaModel whole(c, w), chunked(c, w);
  whole.allocate_kv(8, 16);
  chunked.allocate_kv(8, 16);
  const std::vector<int> table{5, 2};
  std::vector<int> tokens;
  for (int i = 0; i < 27; ++i) tokens.push_back((i * 37 + 11) % c.vocab_size);
  auto batch = [&](int start, int n, bool logits) {
    ForwardBatch b;
    ForwardSeq fs;
    fs.first = 0;
    fs.start_pos = start;
    fs.n_tokens = n;
    fs.block_table = &table;
    fs.logits_row = logits ? b.num_logit_rows++ : -1;
    b.tokens.assign(tokens.begin() + start, tokens.begin() + start + n);
    b.seqs.push_back(fs);
    return b;
  };
  std::vector<float> lw(size_t(c.vocab_size), NAN), lc(lw.size(), NAN);
  whole.forward(batch(0, 27, true), lw.data(), -1, nullptr);
  chunked.forward(batch(0, 13, false), nullptr, -1, nullptr);
  chunked.forward(batch(13, 14, true), lc.data(), -1, nullptr);
  EXPECT_LT(rel_error(lc, lw), 1e-5);
}

// Rows marked for the device come back as the token the CPU sampler draws from the same logits
// (greedy: the argmax and its softmax probability; sampled: the same uniform), the other rows'
// logits exactly as without the marks (the same step run twice rewrites the same K/V).
TEST(CudaModel, RowsSampledOnTheDeviceEqualTheHostSamplersDraw) {
  LLMWB_REQUIRE_GPU();
  auto file = load_model_file(make_random_model(DType::F16, 256, 512, 8, 2, 700, 21));
  const ModelConfig& c = file->config;
  cuda::CudaModel gpu(c, LlamaWeights::bind(*file));
  gpu.allocate_kv(16, 16);
  const std::vector<std::vector<int>> tables{{3, 7}, {1}, {0, 9}, {4}};
  ForwardBatch b;
  const int lens[4] = {17, 4, 9, 1};
  for (int s = 0; s < 4; ++s) {
    ForwardSeq fs;
    fs.first = static_cast<int>(b.tokens.size());
    fs.n_tokens = lens[s];
    fs.block_table = &tables[size_t(s)];
    fs.logits_row = b.num_logit_rows++;
    for (int i = 0; i < lens[s]; ++i) b.tokens.push_back((s * 131 + i * 17) % c.vocab_size);
    b.seqs.push_back(fs);
  }
  const size_t V = size_t(c.vocab_size);
  std::vector<float> all(4 * V, NAN);
  gpu.forward(b, all.data(), -1, nullptr);
  Sampler sampler;
  // Rows 0 and 2 greedy, row 3 sampled (temperature, top-k, top-p, min-p), row 1 on the host.
  for (bool any_sampled : {false, true}) {
    DeviceSampled dev;
    dev.rows = {1, 0, 1, uint8_t(any_sampled)};
    dev.params.resize(4);
    SamplingParams sp;
    sp.temperature = 0.9f, sp.top_k = 50, sp.top_p = 0.9f, sp.min_p = 0.01f;
    Rng rng(77), copy = rng;
    dev.params[3] = {sp.temperature, sp.top_k, sp.top_p, sp.min_p, copy.uniform()};
    std::vector<float> part(4 * V, NAN);
    gpu.forward(b, part.data(), -1, nullptr, &dev);
    ASSERT_EQ(dev.token.size(), 4u);
    for (int r : {0, 2}) {
      const float* row = all.data() + size_t(r) * V;
      const int best = static_cast<int>(std::max_element(row, row + V) - row);
      EXPECT_EQ(dev.token[size_t(r)], best) << "row " << r;
      double sum = 0;
      for (size_t j = 0; j < V; ++j) sum += std::exp(double(row[j]) - row[best]);
      EXPECT_NEAR(dev.prob[size_t(r)], 1.0 / sum, 1e-6) << "row " << r;
      EXPECT_TRUE(std::isnan(part[size_t(r) * V])) << "a device row's logits were copied back";
    }
    if (any_sampled) {
      std::vector<float> row(all.begin() + 3 * V, all.begin() + 4 * V);
      const SampleResult ref = sampler.sample(row.data(), c.vocab_size, sp, rng, {});
      EXPECT_EQ(dev.token[3], ref.token);
      EXPECT_NEAR(dev.prob[3], ref.prob, 1e-6);
    } else {
      EXPECT_EQ(0, std::memcmp(all.data() + 3 * V, part.data() + 3 * V, sizeof(float) * V));
    }
    EXPECT_EQ(0, std::memcmp(all.data() + V, part.data() + V, sizeof(float) * V)) << "the host row changed";
  }
  // Every row on the device: no logits row at all; mismatched flags are refused.
  DeviceSampled dev;
  dev.rows = {1, 1, 1, 1};
  dev.params.resize(4);
  std::vector<float> none(4 * V, NAN);
  gpu.forward(b, none.data(), -1, nullptr, &dev);
  for (float v : none) ASSERT_TRUE(std::isnan(v));
  dev.rows = {1, 1};
  EXPECT_THROW(gpu.forward(b, none.data(), -1, nullptr, &dev), Error) << "flags for 2 of 4 rows";
}

std::vector<std::string> prompts() {
  return {"Once upon a time", "The little dog", "Lily and Tom went to the park", "One day, a big"};
}

// With f32, f16 and int8 K/V (the same pool type on both backends).
TEST(CudaScheduler, BatchedEqualsSequentialAndEqualsTheCpu) {
  LLMWB_REQUIRE_GPU();
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 60;
  for (const char* kv : {"f32", "f16", "int8"}) {
    LLM batched(stories_config("cuda", kv));
    const auto all = batched.generate(prompts(), p);
    LLM cpu(stories_config("cpu", kv));
    const auto ref = cpu.generate(prompts(), p);
    for (size_t i = 0; i < prompts().size(); ++i) {
      LLM one(stories_config("cuda", kv));
      const auto seq = one.generate({prompts()[i]}, p);
      EXPECT_EQ(all[i].outputs[0].text, seq[0].outputs[0].text) << prompts()[i] << ", kv " << kv;
      EXPECT_EQ(all[i].outputs[0].text, ref[i].outputs[0].text) << prompts()[i] << ", kv " << kv;
    }
    // Every block is back in the pool (free or cached) once everything finished.
    const StepTelemetry& t = batched.engine().telemetry();
    EXPECT_EQ(t.kv_dtype, kv);
    EXPECT_EQ(t.blocks_used, 0);
    EXPECT_EQ(t.blocks_free + t.blocks_cached, t.blocks_total);
  }
}

// Speculative decoding on the CUDA runner: the same engine-level verification (guesses scored
// with all_logits in the continuous batch, the rest sampled on the device), the greedy texts of
// the CPU without speculation, and every block back in the pool.
TEST(CudaScheduler, SpeculativeDecodingGivesTheGreedyTextsOfTheCpu) {
  LLMWB_REQUIRE_GPU();
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 60;
  LLM cpu(stories_config("cpu"));
  const auto ref = cpu.generate(prompts(), p);
  for (const char* method : {"ngram", "self-int4"}) {
    EngineConfig c = stories_config("cuda");
    c.speculative = parse_speculative(method);
    LLM spec(c);
    const auto got = spec.generate(prompts(), p);
    for (size_t i = 0; i < prompts().size(); ++i)
      EXPECT_EQ(got[i].outputs[0].text, ref[i].outputs[0].text) << prompts()[i] << ", " << method;
    const StepTelemetry& t = spec.engine().telemetry();
    EXPECT_GT(t.speculative_total.drafted, 0u) << method;
    EXPECT_EQ(t.blocks_used, 0) << method;
  }
}

// Greedy and sampled requests (seeded; top-k, top-p, min-p) in one batch: sampled on the device,
// they give the texts of copying every row back and sampling on the host
// (LLMWB_DEVICE_SAMPLING=0); a repetition penalty stays on the host either way.
TEST(CudaScheduler, DeviceSamplingGivesTheTextsOfHostSampling) {
  LLMWB_REQUIRE_GPU();
  auto run = [](const char* device_sampling) {
    setenv("LLMWB_DEVICE_SAMPLING", device_sampling, 1);
    LLM llm(stories_config("cuda"));
    unsetenv("LLMWB_DEVICE_SAMPLING");
    std::vector<SamplingParams> ps(5);
    for (int i = 0; i < 5; ++i) {
      SamplingParams& p = ps[size_t(i)];
      p.max_tokens = 40;
      p.seed = 100 + i;
      p.temperature = i % 2 ? 0.0f : 0.9f;   // sampled, greedy, sampled, greedy, sampled
    }
    ps[2].top_k = 20, ps[2].top_p = 0.8f;
    ps[3].repetition_penalty = 1.3f;
    ps[4].min_p = 0.05f;
    const std::vector<std::string> texts{"Once upon a time", "The little dog", "Lily and Tom went to the park",
                                         "One day, a big", "The sun"};
    for (int i = 0; i < 5; ++i) llm.engine().add_request(texts[size_t(i)], ps[size_t(i)]);
    std::map<uint64_t, std::string> by_id;
    while (llm.engine().has_unfinished())
      for (const RequestOutput& o : llm.engine().step()) by_id[o.request_id] = o.outputs[0].text;
    std::vector<std::string> out;
    for (auto& [id, t] : by_id) out.push_back(t);
    return out;
  };
  const auto on = run("1"), off = run("0");
  ASSERT_EQ(on.size(), 5u);
  EXPECT_EQ(on, off);
}

TEST(CudaScheduler, ParallelSamplesShareThePromptThroughCopyOnWrite) {
  LLMWB_REQUIRE_GPU();
  // Greedy samples of one prompt must agree; the prompt's last, partly filled block is shared
  // and copied on the first write of each sample (CudaModel::copy_blocks).
  // f16 K/V: the halves are copied; int8 K/V: the codes and their scales.
  for (const char* kv : {"f32", "f16", "int8"}) {
    SamplingParams p;
    p.temperature = 0;
    p.max_tokens = 40;
    p.n = 3;
    EngineConfig c = stories_config("cuda", kv);
    c.block_size = 4;
    LLM llm(c);
    const auto out = llm.generate({"Once upon a time there was"}, p);
    ASSERT_EQ(out[0].outputs.size(), 3u);
    LLM cpu(stories_config("cpu", kv));
    p.n = 1;
    const auto ref = cpu.generate({"Once upon a time there was"}, p);
    for (const auto& o : out[0].outputs) EXPECT_EQ(o.text, ref[0].outputs[0].text) << "kv " << kv;
  }
}

// A second request that shares a long prefix with a finished one reuses its cached blocks on
// the device (f32, f16 and int8 K/V) and gets the tokens of recomputing them.
TEST(CudaScheduler, PrefixCacheHitsChangeNothing) {
  LLMWB_REQUIRE_GPU();
  const std::string prefix =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the sun with her "
      "big red ball. One day, her mom said they would go to the park. Lily was very happy and she ran to";
  for (const char* kv : {"f32", "f16", "int8"}) {
    std::vector<int> with_cache, without;
    for (bool caching : {true, false}) {
      EngineConfig c = stories_config("cuda", kv);
      c.enable_prefix_caching = caching;
      Engine e(c);
      SamplingParams p;
      p.temperature = 0;
      p.max_tokens = 20;
      e.add_request(prefix + " the tree.", p);
      while (e.has_unfinished()) e.step();
      const uint64_t before = e.telemetry().prefix_cache_hit_tokens_total;
      e.add_request(prefix + " the swing.", p);
      RequestOutput last;
      while (e.has_unfinished())
        for (auto& o : e.step())
          if (o.finished) last = o;
      const uint64_t hits = e.telemetry().prefix_cache_hit_tokens_total - before;
      if (caching) {
        EXPECT_GE(hits, 32u) << "kv " << kv;
        EXPECT_EQ(uint64_t(last.num_cached_prompt_tokens), hits) << "kv " << kv;
        with_cache = last.outputs[0].token_ids;
      } else {
        EXPECT_EQ(hits, 0u);
        without = last.outputs[0].token_ids;
      }
    }
    EXPECT_EQ(with_cache, without) << "kv " << kv;
    EXPECT_EQ(with_cache.size(), 20u);
  }
}

TEST(CudaScheduler, AttentionCaptureMatchesTheCpu) {
  LLMWB_REQUIRE_GPU();
  auto capture = [](const std::string& backend) {
    Engine e(stories_config(backend));
    AttentionCaptureRequest req;
    req.layer = 2;
    e.set_attention_capture(req);
    SamplingParams p;
    p.temperature = 0;
    p.max_tokens = 8;
    e.add_request("Once upon a time", p);
    std::shared_ptr<const AttentionSnapshot> last;
    while (e.has_unfinished()) {
      e.step();
      if (e.telemetry().attention) last = e.telemetry().attention;
    }
    return last;
  };
  const auto g = capture("cuda"), c = capture("cpu");
  ASSERT_TRUE(g && c);
  EXPECT_EQ(g->query_positions, c->query_positions);
  EXPECT_EQ(g->context_len, c->context_len);
  EXPECT_LT(rel_error(g->weights, c->weights), 1e-4);
}

TEST(CudaScheduler, TheTokenInspectorRecordsTheSameStepAsTheCpu) {
  LLMWB_REQUIRE_GPU();
  auto inspect = [](const std::string& backend) {
    Engine e(stories_config(backend));
    SamplingParams p;
    p.temperature = 0.8f;
    p.seed = 21;
    p.max_tokens = 12;
    const uint64_t id = e.add_request("Once upon a time", p);
    RequestOutput done;
    while (e.has_unfinished())
      for (RequestOutput& o : e.step())
        if (o.request_id == id && o.finished) done = o;
    InspectStepRequest q;
    q.context = done.prompt_token_ids;
    q.context.insert(q.context.end(), done.outputs[0].token_ids.begin(), done.outputs[0].token_ids.begin() + 7);
    q.params = p;
    q.seed = done.outputs[0].seed;
    q.draws_before = 7;
    StepInspection s = e.inspect_step(q);
    EXPECT_EQ(s.sampler.chosen, done.outputs[0].token_ids[7]) << backend;
    return s;
  };
  const StepInspection g = inspect("cuda"), c = inspect("cpu");
  EXPECT_EQ(g.sampler.chosen, c.sampler.chosen);
  ASSERT_EQ(g.lens.size(), c.lens.size());
  for (size_t l = 0; l < g.lens.size(); ++l) {
    EXPECT_LT(rel_error(g.lens[l].logits, c.lens[l].logits), 1e-4) << "layer " << l;
    EXPECT_EQ(g.lens[l].chosen_rank, c.lens[l].chosen_rank) << "layer " << l;
  }
  // After the last layer the lens is the model's own logits on the device too.
  EXPECT_LT(rel_error(g.lens.back().logits, g.logits), 1e-6);
  ASSERT_EQ(g.attention.weights.size(), c.attention.weights.size());
  for (size_t r = 0; r < g.attention.weights.size(); ++r)
    EXPECT_LT(rel_error(g.attention.weights[r], c.attention.weights[r]), 1e-4) << "row " << r;
  bool timed = false;
  for (const OpTime& o : g.timing.ops) timed = timed || (o.layer >= 0 && o.seconds > 0);
  EXPECT_TRUE(timed);
}

}  // namespace
