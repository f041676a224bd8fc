// Tensor and pipeline parallelism on the CPU (parallel_runner.h): the in-process communicator's
// collectives, and greedy tokens and logits of TP 2 / 4, PP 2 and TP 2 x PP 2 against the one-rank
// runner on stories260K and on random MHA, GQA and Q8_0 models.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "llmwb/engine.h"
#include "llmwb/errors.h"
#include "llmwb/llm.h"
#include "llmwb/tuning_config.h"
#include "model/llama_weights.h"
#include "parallel/thread_communicator.h"
#include "runner/cpu_runner.h"
#include "runner/parallel_runner.h"
#include "support/test_support.h"

using namespace llmwb;

namespace {

// Runs fn(comm) on `size` threads, one per rank of a fresh group.
void on_ranks(int size, const std::function<void(Communicator&)>& fn) {
  ThreadGroup g(size);
  std::vector<std::thread> ts;
  for (int r = 0; r < size; ++r) ts.emplace_back([&, r] { fn(g.communicator(r)); });
  for (auto& t : ts) t.join();
}

TEST(ThreadCommunicator, AllReduceSumGivesEveryRankTheSumOfAllRanks) {
  const int P = 4, n = 1001;
  std::vector<std::vector<float>> got(P);
  on_ranks(P, [&](Communicator& c) {
    for (int round = 0; round < 3; ++round) {   // buffers reused across calls
      std::vector<float> x(n);
      for (int i = 0; i < n; ++i) x[size_t(i)] = float(c.rank() * 1000 + i + round);
      c.all_reduce_sum(x.data(), n);
      if (round == 2) got[size_t(c.rank())] = x;
    }
  });
  for (int r = 0; r < P; ++r)
    for (int i = 0; i < n; ++i) ASSERT_EQ(got[size_t(r)][size_t(i)], float(6000 + 4 * (i + 2))) << r << " " << i;
}

TEST(ThreadCommunicator, AllGatherConcatenatesTheRanksInRankOrder) {
  const int P = 3;
  std::vector<std::vector<float>> got(P);
  on_ranks(P, [&](Communicator& c) {
    const float in[2] = {float(c.rank()), float(10 * c.rank())};
    std::vector<float> out(2 * P);
    c.all_gather(in, 2, out.data());
    got[size_t(c.rank())] = out;
  });
  for (int r = 0; r < P; ++r) EXPECT_EQ(got[size_t(r)], (std::vector<float>{0, 0, 1, 10, 2, 20}));
}

TEST(ThreadCommunicator, BroadcastCopiesTheRootsBufferToEveryRank) {
  std::vector<float> got(4);
  on_ranks(4, [&](Communicator& c) {
    float x = float(c.rank() + 100);
    c.broadcast(&x, 1, 2);
    got[size_t(c.rank())] = x;
  });
  EXPECT_EQ(got, (std::vector<float>{102, 102, 102, 102}));
}

TEST(ThreadCommunicator, SendAndRecvPassBuffersInOrder) {
  std::vector<float> got;
  on_ranks(2, [&](Communicator& c) {
    for (int k = 0; k < 3; ++k) {
      float x[2] = {float(k), float(k + 1)};
      if (c.rank() == 0) c.send(x, 2, 1);
      else {
        float y[2];
        c.recv(y, 2, 0);
        got.insert(got.end(), y, y + 2);
      }
    }
  });
  EXPECT_EQ(got, (std::vector<float>{0, 1, 1, 2, 2, 3}));
}

TEST(ThreadCommunicator, AnAbortedGroupMakesWaitingRanksThrowInsteadOfHanging) {
  int errors = 0;
  std::mutex mu;
  on_ranks(3, [&](Communicator& c) {
    try {
      if (c.rank() == 1) {
        c.abort("rank 1 failed");
        return;
      }
      float x = 1;
      c.all_reduce_sum(&x, 1);
    } catch (const Error& e) {
      std::lock_guard lock(mu);
      ++errors;
      EXPECT_NE(std::string(e.what()).find("rank 1 failed"), std::string::npos) << e.what();
    }
  });
  EXPECT_EQ(errors, 2);
}

// --- runners ---------------------------------------------------------------------------------

struct GreedyRun {
  std::vector<int> tokens;                 // greedy continuation
  std::vector<std::vector<float>> logits;  // every step's logits rows
};

int argmax(const float* v, int n) { return int(std::max_element(v, v + n) - v); }

// A step with two sequences (a prompt of several tokens each, then one token at a time), each
// with its own blocks: greedy for `steps` steps through `runner`.
GreedyRun greedy(ModelRunner& runner, const ModelConfig& c, int steps) {
  runner.allocate_kv(16, 8, KVDType::F32);
  const std::vector<int> bt0{0, 1, 2, 3, 4, 5, 6, 7}, bt1{8, 9, 10, 11, 12, 13, 14, 15};
  std::vector<std::vector<int>> seq{{1, 5, 9, 17, 33, 4, 100 % c.vocab_size}, {1, 7, 3}};
  std::vector<int> pos{0, 0};
  GreedyRun out;
  for (int s = 0; s < steps; ++s) {
    ForwardBatch b;
    b.step = uint64_t(s + 1);
    for (int q = 0; q < 2; ++q) {
      ForwardSeq fs;
      fs.first = int(b.tokens.size());
      const int from = pos[size_t(q)];
      const std::vector<int>& toks = seq[size_t(q)];
      fs.n_tokens = int(toks.size()) - from;
      fs.start_pos = from;
      fs.block_table = q == 0 ? &bt0 : &bt1;
      fs.logits_row = q;
      b.tokens.insert(b.tokens.end(), toks.begin() + from, toks.end());
      b.seqs.push_back(fs);
    }
    b.num_logit_rows = 2;
    std::vector<float> logits(size_t(2 * c.vocab_size));
    runner.execute(b, logits.data(), -1, nullptr, nullptr);
    out.logits.push_back(logits);
    for (int q = 0; q < 2; ++q) {
      pos[size_t(q)] = int(seq[size_t(q)].size());
      const int t = argmax(logits.data() + int64_t(q) * c.vocab_size, c.vocab_size);
      seq[size_t(q)].push_back(t);
      out.tokens.push_back(t);
    }
  }
  return out;
}

// The largest |a - b| over a step's logits, relative to the largest |a|.
double max_relative_difference(const GreedyRun& a, const GreedyRun& b) {
  double worst = 0;
  for (size_t s = 0; s < a.logits.size(); ++s) {
    double scale = 0, diff = 0;
    for (size_t i = 0; i < a.logits[s].size(); ++i) {
      scale = std::max(scale, double(std::fabs(a.logits[s][i])));
      diff = std::max(diff, double(std::fabs(a.logits[s][i] - b.logits[s][i])));
    }
    worst = std::max(worst, diff / std::max(scale, 1e-30));
  }
  return worst;
}

GreedyRun run_model(const std::string& path, int tp, int pp, int steps) {
  auto file = load_model_file(path);
  LlamaWeights w = LlamaWeights::bind(*file);
  TuningConfig tuning;
  std::unique_ptr<ModelRunner> r;
  if (tp == 1 && pp == 1) r = std::make_unique<CpuRunner>(2, tuning, *file, std::move(w), nullptr);
  else r = std::make_unique<ParallelRunner>(tp, pp, 2, tuning, *file, w, nullptr);
  return greedy(*r, file->config, steps);
}

void expect_same_as_one_rank(const std::string& path, const std::vector<std::pair<int, int>>& layouts, int steps,
                             double tolerance = 1e-5) {
  const GreedyRun one = run_model(path, 1, 1, steps);
  for (auto [tp, pp] : layouts) {
    SCOPED_TRACE("tp " + std::to_string(tp) + " x pp " + std::to_string(pp));
    const GreedyRun many = run_model(path, tp, pp, steps);
    EXPECT_EQ(many.tokens, one.tokens);
    EXPECT_LE(max_relative_difference(one, many), tolerance);
  }
}

TEST(ParallelRunner, Stories260KGreedyTokensAndLogitsMatchOneRankForTp2Tp4Pp2AndTp2xPp2) {
  // 8 query heads, 4 KV heads, hidden 172 (43 per rank at TP 4), 5 layers (stages of 2 and 3).
  expect_same_as_one_rank(test::shared_path("models/stories260K/stories260K.gguf"), {{2, 1}, {4, 1}, {1, 2}, {2, 2}},
                          12);
}

TEST(ParallelRunner, RandomMultiHeadModelMatchesOneRank) {
  const std::string m = test::make_test_model("parallel", "mha", 64, 96, 4, 4, 300, DType::F32, 11);
  expect_same_as_one_rank(m, {{2, 1}, {4, 1}, {1, 2}, {2, 2}}, 8);
}

TEST(ParallelRunner, RandomGroupedQueryModelMatchesOneRank) {
  const std::string m = test::make_test_model("parallel", "gqa", 64, 128, 8, 4, 301, DType::F16, 12);
  expect_same_as_one_rank(m, {{2, 1}, {4, 1}, {2, 2}}, 8);
}

TEST(ParallelRunner, Q8ModelSplitsOnBlockBoundariesAndMatchesOneRank) {
  // head_dim 32, hidden 128: wo's and w2's columns split on Q8_0's blocks of 32 (each half's
  // product sums to the whole one's within 6e-8). The integer kernels quantize their input to
  // int8 per block of 32, so the all-reduce's other summation order (~1e-7 on the residual)
  // moves a few activations across a rounding step at the next layer: one quantum, ~1 % of a
  // block's largest value. The logits agree to 2e-2 relative, the tokens exactly; pipeline
  // stages (no all-reduce) agree bitwise.
  const std::string m = test::make_test_model("parallel", "q8", 128, 128, 4, 2, 320, DType::Q8_0, 13);
  expect_same_as_one_rank(m, {{2, 1}}, 6, 2e-2);
  expect_same_as_one_rank(m, {{1, 2}}, 6, 0.0);
}

TEST(ParallelRunner, ATensorParallelSizeThatDoesNotDivideTheKvHeadsIsAClearError) {
  const std::string m = test::make_test_model("parallel", "gqa2", 64, 128, 8, 2, 301, DType::F32, 14);
  const std::string e = test::error_of([&] { run_model(m, 4, 1, 1); });
  EXPECT_NE(e.find("tensor_parallel_size"), std::string::npos) << e;
  EXPECT_NE(e.find("does not divide the model's 2 KV heads"), std::string::npos) << e;
}

TEST(ParallelRunner, AQuantizedSplitThatWouldCutABlockIsAClearError) {
  // head_dim 16: at TP 4 each rank's wo columns are 16 wide, half a Q8_0 block.
  const std::string m = test::make_test_model("parallel", "q8small", 64, 128, 4, 4, 300, DType::Q8_0, 15);
  const std::string e = test::error_of([&] { run_model(m, 4, 1, 1); });
  EXPECT_NE(e.find("tensor_parallel_size"), std::string::npos) << e;
  EXPECT_NE(e.find("not on a block boundary"), std::string::npos) << e;
  EXPECT_EQ(run_model(m, 2, 1, 2).tokens, run_model(m, 1, 1, 2).tokens);   // 32 columns: whole blocks
}

TEST(ParallelRunner, MorePipelineStagesThanLayersIsAClearError) {
  const std::string m = test::make_test_model("parallel", "mha", 64, 96, 4, 4, 300, DType::F32, 11);
  const std::string e = test::error_of([&] { run_model(m, 1, 3, 1); });
  EXPECT_NE(e.find("pipeline_parallel_size"), std::string::npos) << e;
}

TEST(ParallelRunner, RankStatsCountAllReducesAndPipelineTransfers) {
  auto file = load_model_file(test::shared_path("models/stories260K/stories260K.gguf"));
  LlamaWeights w = LlamaWeights::bind(*file);
  ParallelRunner r(2, 2, 2, TuningConfig{}, *file, w, nullptr);
  greedy(r, file->config, 3);
  const std::vector<RankStats> s = r.rank_stats();
  ASSERT_EQ(s.size(), 4u);
  for (const RankStats& k : s) {
    EXPECT_EQ(k.steps, 3);
    EXPECT_GT(k.allreduce_bytes, 0u);   // two all-reduces per layer
    EXPECT_GT(k.sendrecv_bytes, 0u);
  }
  EXPECT_GT(s[2].recv_seconds, 0.0);   // stage 1 waits for stage 0
}

TEST(ParallelRunner, LlmWithTensorParallelSizeTwoGeneratesWhatOneRankGenerates) {
  const std::string model = test::shared_path("models/stories260K/stories260K.gguf");
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 40;
  auto text = [&](int tp) {
    LLM llm(model, "", tp);
    auto out = llm.generate({"Once upon a time", "The cat"}, p);
    EXPECT_TRUE(out[0].error.empty()) << out[0].error;
    return out[0].outputs[0].text + "|" + out[1].outputs[0].text;
  };
  EXPECT_EQ(text(2), text(1));
}

TEST(ParallelRunner, TheEngineRejectsATensorParallelSizeThatDoesNotDivideTheKvHeads) {
  EngineConfig c;
  c.model = test::shared_path("models/stories260K/stories260K.gguf");
  c.tensor_parallel_size = 3;
  const std::string e = test::error_of([&] { LLM llm(c); });
  EXPECT_NE(e.find("tensor_parallel_size"), std::string::npos) << e;
}

TEST(ParallelRunner, StepTelemetryReportsEachRanksAllReduceAndPipelineBytes) {
  EngineConfig c;
  c.model = test::shared_path("models/stories260K/stories260K.gguf");
  c.tensor_parallel_size = 2;
  c.pipeline_parallel_size = 2;
  c.threads = 2;
  Engine e(c);
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 3;
  e.add_request_tokens({1, 400, 300}, p);
  e.step();   // the prompt: 3 tokens, one logits row
  const StepTelemetry& t = e.telemetry();
  ASSERT_EQ(t.ranks.size(), 4u);
  const uint64_t row = 64 * sizeof(float);   // dim 64
  // Stage 0 holds layers 0-1 (two all-reduces each over 3 rows), stage 1 layers 2-4, whose last
  // layer computes past its K/V only the logits row.
  EXPECT_EQ(t.ranks[0].allreduce_bytes, 2 * 2 * 3 * row);
  EXPECT_EQ(t.ranks[2].allreduce_bytes, 2 * 2 * 3 * row + 2 * 1 * row);
  EXPECT_EQ(t.ranks[1].sendrecv_bytes, 3 * row);
  EXPECT_EQ(t.ranks[3].pp_stage, 1);
  EXPECT_EQ(t.ranks[3].tp_rank, 1);
  for (const RankTelemetry& r : t.ranks) EXPECT_GT(r.compute_seconds, 0.0);
}

}  // namespace
