// Tensor and pipeline parallelism on the CPU (parallel_runner.h): the in-process communicator's
// collectives, and greedy tokens and logits of TP 2 / 4, PP 2 and TP 2 x PP 2 against the one-rank
// runner on stories260K and on random MHA, GQA and Q8_0 models; pipeline micro-batches (the
// cut, the same tokens and logits with 1 / 2 / 4 of them, the attention heatmap across them,
// the per-rank spans and bubble, a failing rank mid-pipeline).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <thread>
#include <tuple>

#include "llmwb/engine.h"
#include "llmwb/errors.h"
#include "llmwb/llm.h"
#include "llmwb/tuning_config.h"
#include "model/llama_weights.h"
#include "parallel/thread_communicator.h"
#include "runner/cpu_runner.h"
#include "runner/micro_batches.h"
#include "runner/parallel_runner.h"
#include "support/runner_greedy.h"
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

using test::GreedyRun;

int argmax(const float* v, int n) { return int(std::max_element(v, v + n) - v); }

// Two sequences, each with its own blocks, greedy for `steps` steps through `runner`
// (support/runner_greedy.h).
GreedyRun greedy(ModelRunner& runner, const ModelConfig& c, int steps) {
  const test::GreedySetup setup{
      16, 8, {{1, 5, 9, 17, 33, 4, 100 % c.vocab_size}, {1, 7, 3}}, {{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 12, 13, 14, 15}}};
  return test::greedy_two_sequences(runner, c.vocab_size, setup, steps);
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

// Four sequences at once (prompts of 19, 6, 1 and 9 tokens, the longest first: a prefill of 35
// tokens that micro-batch cuts fall inside of), then batched decode of four tokens a step.
// Sequence 1 asks for every prompt token's logits (all_logits) in its prefill; sequence 0's
// attention at `record_layer` is recorded every step into `records`.
GreedyRun greedy4(ModelRunner& runner, const ModelConfig& c, int steps, int record_layer = -1,
                  std::vector<AttentionRecord>* records = nullptr) {
  runner.allocate_kv(32, 4, KVDType::F32);
  std::vector<std::vector<int>> tables(4);
  for (int q = 0; q < 4; ++q)
    for (int b = 0; b < 8; ++b) tables[size_t(q)].push_back(q * 8 + b);
  std::vector<std::vector<int>> seq(4);
  for (int i = 0; i < 19; ++i) seq[0].push_back((7 * i + 3) % c.vocab_size);
  seq[1] = {1, 5, 9, 17, 33, 4};
  seq[2] = {11};
  for (int i = 0; i < 9; ++i) seq[3].push_back((13 * i + 40) % c.vocab_size);
  std::vector<int> pos(4, 0);
  GreedyRun out;
  for (int s = 0; s < steps; ++s) {
    ForwardBatch b;
    b.step = uint64_t(s + 1);
    int rows = 0;
    std::vector<int> last_row(4);
    for (int q = 0; q < 4; ++q) {
      ForwardSeq fs;
      fs.first = int(b.tokens.size());
      const std::vector<int>& toks = seq[size_t(q)];
      fs.n_tokens = int(toks.size()) - pos[size_t(q)];
      fs.start_pos = pos[size_t(q)];
      fs.block_table = &tables[size_t(q)];
      fs.logits_row = rows;
      fs.all_logits = q == 1 && s == 0;
      fs.capture_attention = q == 0;
      rows += fs.all_logits ? fs.n_tokens : 1;
      last_row[size_t(q)] = rows - 1;
      b.tokens.insert(b.tokens.end(), toks.begin() + pos[size_t(q)], toks.end());
      b.seqs.push_back(fs);
    }
    b.num_logit_rows = rows;
    std::vector<float> logits(size_t(rows) * size_t(c.vocab_size));
    AttentionRecord rec;
    runner.execute(b, logits.data(), record_layer, records ? &rec : nullptr, nullptr);
    if (records) records->push_back(rec);
    out.logits.push_back(logits);
    for (int q = 0; q < 4; ++q) {
      pos[size_t(q)] = int(seq[size_t(q)].size());
      const int t = argmax(logits.data() + int64_t(last_row[size_t(q)]) * c.vocab_size, c.vocab_size);
      seq[size_t(q)].push_back(t);
      out.tokens.push_back(t);
    }
  }
  return out;
}

struct LoadedModel {
  std::unique_ptr<ModelFile> file;
  LlamaWeights weights;
  explicit LoadedModel(const std::string& path) : file(load_model_file(path)), weights(LlamaWeights::bind(*file)) {}
};

std::unique_ptr<ModelRunner> make_runner(LoadedModel& m, int tp, int pp, int micro_batches, int threads = 2) {
  if (tp == 1 && pp == 1) return std::make_unique<CpuRunner>(threads, TuningConfig{}, *m.file, m.weights, nullptr);
  return std::make_unique<ParallelRunner>(tp, pp, threads, TuningConfig{}, *m.file, m.weights, nullptr, micro_batches);
}

double max_abs_difference(const GreedyRun& a, const GreedyRun& b) {
  double d = 0;
  for (size_t s = 0; s < a.logits.size(); ++s)
    for (size_t i = 0; i < a.logits[s].size(); ++i)
      d = std::max(d, double(std::fabs(a.logits[s][i] - b.logits[s][i])));
  return d;
}

// PP 2 and TP 2 x PP 2 with 1, 2, 3 and 4 micro-batches against one rank: the same
// greedy tokens; pipeline stages alone give the same bits whatever the cut (every kernel
// computes a row alone, attention reads the earlier pieces' K/V from the cache), and TP 2 x PP 2
// the same bits as its own run without micro-batches (the all-reduce's order is the only
// difference from one rank: within 1e-5).
void expect_micro_batches_change_nothing(const std::string& path, int steps) {
  LoadedModel m(path);
  const ModelConfig& c = m.file->config;
  const GreedyRun one = greedy4(*make_runner(m, 1, 1, 0), c, steps);
  for (int tp : {1, 2}) {
    const GreedyRun whole = greedy4(*make_runner(m, tp, 2, 1), c, steps);
    EXPECT_EQ(whole.tokens, one.tokens) << "tp " << tp;
    EXPECT_LE(max_relative_difference(one, whole), tp == 1 ? 0.0 : 1e-5) << "tp " << tp;
    for (int mb : {2, 3, 4}) {
      SCOPED_TRACE("tp " + std::to_string(tp) + " x pp 2, micro-batches " + std::to_string(mb));
      const GreedyRun cut = greedy4(*make_runner(m, tp, 2, mb), c, steps);
      EXPECT_EQ(cut.tokens, one.tokens);
      EXPECT_EQ(max_abs_difference(cut, whole), 0.0);
      EXPECT_LE(max_relative_difference(one, cut), tp == 1 ? 0.0 : 1e-5);
    }
  }
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

TEST(MicroBatches, TheCutFollowsTokenRangesSplitsSequencesAndMapsLogitsRows) {
  const std::vector<int> t0{0, 1, 2}, t1{3}, t2{4, 5};
  ForwardBatch b;
  b.step = 7;
  b.tokens = {10, 11, 12, 13, 14, 15, 16, 20, 30, 31, 32};
  // seq 0: 7 new tokens after 2 cached, its last token's logits in row 2; seq 1: one decode
  // token, row 1; seq 2: 3 tokens, every token's logits in rows 3..5, its attention captured.
  b.seqs.push_back(ForwardSeq{0, 7, 2, &t0, 2});
  b.seqs.push_back(ForwardSeq{7, 1, 40, &t1, 1});
  b.seqs.back().decode = true;
  b.seqs.push_back(ForwardSeq{8, 3, 0, &t2, 3});
  b.seqs.back().all_logits = true;
  b.seqs.back().capture_attention = true;
  b.num_logit_rows = 6;   // row 0 unused: logits rows need not be dense for the cut
  const std::vector<MicroBatch> mb = split_micro_batches(b, 3);
  ASSERT_EQ(mb.size(), 3u);
  // Tokens [0, 3), [3, 7), [7, 11).
  EXPECT_EQ(mb[0].token0, 0);
  EXPECT_EQ(mb[1].token0, 3);
  EXPECT_EQ(mb[2].token0, 7);
  EXPECT_EQ(mb[0].batch.tokens, (std::vector<int>{10, 11, 12}));
  EXPECT_EQ(mb[1].batch.tokens, (std::vector<int>{13, 14, 15, 16}));
  EXPECT_EQ(mb[2].batch.tokens, (std::vector<int>{20, 30, 31, 32}));
  // Seq 0 in two pieces: positions 2..4 without logits, then 5..8 with the last token's.
  ASSERT_EQ(mb[0].batch.seqs.size(), 1u);
  EXPECT_EQ(mb[0].batch.seqs[0].first, 0);
  EXPECT_EQ(mb[0].batch.seqs[0].n_tokens, 3);
  EXPECT_EQ(mb[0].batch.seqs[0].start_pos, 2);
  EXPECT_EQ(mb[0].batch.seqs[0].logits_row, -1);
  EXPECT_EQ(mb[0].batch.num_logit_rows, 0);
  ASSERT_EQ(mb[1].batch.seqs.size(), 1u);
  EXPECT_EQ(mb[1].batch.seqs[0].first, 0);
  EXPECT_EQ(mb[1].batch.seqs[0].n_tokens, 4);
  EXPECT_EQ(mb[1].batch.seqs[0].start_pos, 5);
  EXPECT_EQ(mb[1].batch.seqs[0].block_table, &t0);
  EXPECT_EQ(mb[1].batch.seqs[0].logits_row, 0);
  EXPECT_EQ(mb[1].logit_rows, (std::vector<int>{2}));
  // The decode token and all of seq 2.
  ASSERT_EQ(mb[2].batch.seqs.size(), 2u);
  EXPECT_EQ(mb[2].batch.seqs[0].first, 0);
  EXPECT_EQ(mb[2].batch.seqs[0].start_pos, 40);
  EXPECT_TRUE(mb[2].batch.seqs[0].decode);
  EXPECT_EQ(mb[2].batch.seqs[1].first, 1);
  EXPECT_EQ(mb[2].batch.seqs[1].logits_row, 1);
  EXPECT_TRUE(mb[2].batch.seqs[1].all_logits);
  EXPECT_EQ(mb[2].batch.num_logit_rows, 4);
  EXPECT_EQ(mb[2].logit_rows, (std::vector<int>{1, 3, 4, 5}));
  EXPECT_FALSE(mb[0].captures_attention);
  EXPECT_TRUE(mb[2].captures_attention);
  // Step ids: distinct, not the step's, and 0 stays 0 (derived again at every use).
  EXPECT_NE(mb[0].batch.step, b.step);
  EXPECT_NE(mb[0].batch.step, mb[1].batch.step);
  EXPECT_NE(mb[1].batch.step, mb[2].batch.step);
  b.step = 0;
  EXPECT_EQ(split_micro_batches(b, 2)[1].batch.step, 0u);
  // An all_logits sequence cut in two: each piece its own rows.
  const std::vector<MicroBatch> two = split_micro_batches(b, 2);   // [0, 5), [5, 11)
  EXPECT_EQ(two[0].batch.num_logit_rows, 0);
  EXPECT_EQ(two[1].logit_rows, (std::vector<int>{2, 1, 3, 4, 5}));
  // More micro-batches than tokens: one token each.
  EXPECT_EQ(split_micro_batches(b, 50).size(), 11u);
}

TEST(MicroBatches, CountIsOneWithoutStagesAutomaticNeedsCoresOfItsOwnAndEnoughTokens) {
  for (bool shared : {false, true}) {
    EXPECT_EQ(micro_batch_count(0, 1, 500, shared), 1);
    EXPECT_EQ(micro_batch_count(4, 1, 500, shared), 1);
    EXPECT_EQ(micro_batch_count(3, 2, 64, shared), 3);
    EXPECT_EQ(micro_batch_count(4, 2, 3, shared), 3);   // at least a token each
    EXPECT_EQ(micro_batch_count(4, 2, 1, shared), 1);
    const std::string e = test::error_of([&] { micro_batch_count(-1, 2, 10, shared); });
    EXPECT_NE(e.find("pipeline_micro_batches"), std::string::npos) << e;
  }
  // Automatic: ranks with cores of their own (MPI) cut a step with enough tokens per stage.
  EXPECT_EQ(micro_batch_count(0, 2, 2 * kMinAutoMicroBatchTokens, false), 2);
  EXPECT_EQ(micro_batch_count(0, 2, 2 * kMinAutoMicroBatchTokens - 1, false), 1);
  EXPECT_EQ(micro_batch_count(0, 4, 1000, false), 4);
  // In-process ranks share the cores: the stages in turn.
  EXPECT_EQ(micro_batch_count(0, 4, 1000, true), 1);
}

TEST(ParallelRunner, MicroBatchesChangeNoTokenOnStories260K) {
  expect_micro_batches_change_nothing(test::shared_path("models/stories260K/stories260K.gguf"), 6);
}

TEST(ParallelRunner, MicroBatchesChangeNoTokenOnRandomMhaAndGqaModels) {
  expect_micro_batches_change_nothing(test::make_test_model("parallel", "mha", 64, 96, 4, 4, 300, DType::F32, 11), 5);
  expect_micro_batches_change_nothing(test::make_test_model("parallel", "gqa", 64, 128, 8, 4, 301, DType::F16, 12), 5);
}

TEST(ParallelRunner, TheAttentionHeatmapRecordsAcrossMicroBatches) {
  // Layer 3 of stories260K is in stage 1 (layers 2-4); sequence 0's 19 prompt tokens span
  // micro-batches 0 and 1 of 4 (35 tokens), so its rows come from two pieces.
  LoadedModel m(test::shared_path("models/stories260K/stories260K.gguf"));
  std::vector<AttentionRecord> one, cut;
  greedy4(*make_runner(m, 1, 1, 0), m.file->config, 3, 3, &one);
  greedy4(*make_runner(m, 1, 2, 4), m.file->config, 3, 3, &cut);
  ASSERT_EQ(one.size(), cut.size());
  for (size_t s = 0; s < one.size(); ++s) {
    EXPECT_EQ(cut[s].layer, one[s].layer);
    EXPECT_EQ(cut[s].n_heads, one[s].n_heads);
    EXPECT_EQ(cut[s].start_pos, one[s].start_pos);
    ASSERT_EQ(cut[s].rows.size(), one[s].rows.size()) << "step " << s;
    for (size_t r = 0; r < one[s].rows.size(); ++r) EXPECT_EQ(cut[s].rows[r], one[s].rows[r]) << s << " " << r;
  }
  EXPECT_EQ(one[0].rows.size(), size_t(19 * 8));   // every prompt query, 8 heads
}

TEST(ParallelRunner, RankSpansShowThePipelineScheduleAndTheBubble) {
  LoadedModel m(test::shared_path("models/stories260K/stories260K.gguf"));
  auto r = make_runner(m, 2, 2, 2);
  ForwardBatch b;
  const std::vector<int> bt{0, 1, 2, 3};
  b.step = 1;
  for (int i = 0; i < 20; ++i) b.tokens.push_back(1 + 17 * i % 300);
  b.seqs.push_back(ForwardSeq{0, 20, 0, &bt, 0});
  b.num_logit_rows = 1;
  r->allocate_kv(4, 8, KVDType::F32);
  std::vector<float> logits(size_t(m.file->config.vocab_size));
  r->execute(b, logits.data(), -1, nullptr, nullptr);
  const std::vector<RankTelemetry> t = r->rank_telemetry();
  ASSERT_EQ(t.size(), 4u);
  const uint64_t mb_bytes = 10 * 64 * sizeof(float);   // 10 tokens of dim 64 per micro-batch
  for (const RankTelemetry& k : t) {
    SCOPED_TRACE("stage " + std::to_string(k.pp_stage) + " rank " + std::to_string(k.tp_rank));
    EXPECT_EQ(k.micro_batches, 2);
    ASSERT_FALSE(k.spans.empty());
    float prev = 0;
    int compute[2] = {0, 0}, allreduce = 0, sends = 0, recvs = 0;
    for (const RankSpan& s : k.spans) {
      EXPECT_LE(prev, s.begin + 1e-6f);   // in time order, not overlapping
      EXPECT_LE(s.begin, s.end);
      EXPECT_LE(s.end, float(k.wall_seconds) + 1e-5f);
      prev = s.end;
      ASSERT_GE(s.micro_batch, 0);
      ASSERT_LT(s.micro_batch, 2);
      if (s.kind == RankSpan::Kind::Compute) ++compute[s.micro_batch];
      if (s.kind == RankSpan::Kind::AllReduce) {
        ++allreduce;
        EXPECT_GT(s.bytes, 0u);
      }
      if (s.kind == RankSpan::Kind::Send) {
        ++sends;
        EXPECT_EQ(s.bytes, mb_bytes);
      }
      if (s.kind == RankSpan::Kind::Recv) {
        ++recvs;
        EXPECT_EQ(s.bytes, mb_bytes);
      }
    }
    EXPECT_GT(compute[0], 0);
    EXPECT_GT(compute[1], 0);
    EXPECT_GT(allreduce, 0);
    EXPECT_EQ(sends, k.pp_stage == 0 ? 2 : 0);
    EXPECT_EQ(recvs, k.pp_stage == 1 ? 2 : 0);
    EXPECT_EQ(k.sendrecv_bytes, 2 * mb_bytes);
    EXPECT_GT(k.wall_seconds, 0.0);
    EXPECT_GE(k.bubble_fraction, 0.0);
    EXPECT_LT(k.bubble_fraction, 1.0);
    EXPECT_NEAR(k.bubble_seconds, k.wall_seconds - k.compute_seconds - k.allreduce_seconds, 1e-9);
  }
  // Causality on the one clock: stage 1 computes micro-batch i only after stage 0 began
  // sending it.
  for (int i = 0; i < 2; ++i) {
    float sent = -1, computed = -1;
    for (const RankSpan& s : t[0].spans)
      if (s.kind == RankSpan::Kind::Send && s.micro_batch == i) sent = s.begin;
    for (const RankSpan& s : t[2].spans)
      if (s.kind == RankSpan::Kind::Compute && s.micro_batch == i && computed < 0) computed = s.begin;
    EXPECT_GE(sent, 0.0f);
    EXPECT_GE(computed, sent) << "micro-batch " << i;
  }
}

TEST(ParallelRunner, ARankThatFailsMidPipelineEndsEveryRankWithAnError) {
  // Stage 1 is told the step is one batch while stage 0 cuts it in two: stage 1's receive
  // finds half the rows it expects, fails, and the abort must reach stage 0 blocked in its
  // next send instead of leaving it waiting.
  LoadedModel m(test::shared_path("models/stories260K/stories260K.gguf"));
  ThreadGroup world(2), g0(1), g1(1);
  RankWorker s0(m.file->config, m.weights, 0, 1, 0, 2, 1, TuningConfig{}, g0.communicator(0), world.communicator(0));
  RankWorker s1(m.file->config, m.weights, 0, 1, 1, 2, 1, TuningConfig{}, g1.communicator(0), world.communicator(1));
  s0.allocate_kv(4, 8, KVDType::F32);
  s1.allocate_kv(4, 8, KVDType::F32);
  ForwardBatch b;
  const std::vector<int> bt{0, 1, 2, 3};
  for (int i = 0; i < 16; ++i) b.tokens.push_back(1 + i);
  b.seqs.push_back(ForwardSeq{0, 16, 0, &bt, 0});
  b.num_logit_rows = 1;
  const std::vector<MicroBatch> cut = split_micro_batches(b, 2);
  std::string e0, e1;
  const auto origin = SpanLog::Clock::now();
  std::thread a([&] {
    e0 = test::error_of([&] {
      try {
        s0.run(b, cut, -1, nullptr, origin);
      } catch (...) {
        world.abort("stage 0 failed");
        throw;
      }
    });
  });
  std::thread c([&] {
    e1 = test::error_of([&] {
      try {
        s1.run(b, {}, -1, nullptr, origin);
      } catch (const std::exception& x) {
        world.abort(x.what());
        throw;
      }
    });
  });
  a.join();
  c.join();
  EXPECT_NE(e1.find("expected 1024 floats from rank 0, got 512"), std::string::npos) << e1;
  EXPECT_NE(e0.find("another rank failed"), std::string::npos) << e0;
}

TEST(ParallelRunner, LlmWithMicroBatchesGeneratesWhatOneRankGeneratesAndANegativeCountIsAnError) {
  const std::string model = test::shared_path("models/stories260K/stories260K.gguf");
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 24;
  auto text = [&](int tp, int pp, int mb) {
    EngineConfig c;
    c.model = model;
    c.tensor_parallel_size = tp;
    c.pipeline_parallel_size = pp;
    c.pipeline_micro_batches = mb;
    c.threads = 2;
    LLM llm(c);
    auto out = llm.generate({"Once upon a time, there was a little girl named Lily. She", "The cat sat on the mat and",
                             "One day", "Tom and his dog went to the park to play with a red ball"},
                            p);
    std::string all;
    for (const auto& o : out) {
      EXPECT_TRUE(o.error.empty()) << o.error;
      all += o.outputs[0].text + "|";
    }
    return all;
  };
  const std::string one = text(1, 1, 0);
  EXPECT_EQ(text(1, 2, 2), one);
  EXPECT_EQ(text(2, 2, 4), one);
  EngineConfig c;
  c.model = model;
  c.pipeline_parallel_size = 2;
  c.pipeline_micro_batches = -2;
  const std::string e = test::error_of([&] { LLM llm(c); });
  EXPECT_NE(e.find("pipeline_micro_batches"), std::string::npos) << e;
}

TEST(ParallelRunner, MicroBatchesReadPrefixCacheHitsChunkedPrefillsAndParallelSamplesLikeOneRank) {
  // Blocks of 4 tokens, 16 tokens a step (prompts prefilled in chunks), two samples per request
  // sharing the prompt's blocks, and a second request whose 24-token prefix is in the cache.
  auto run = [](int tp, int pp, int mb, uint64_t* hits) {
    EngineConfig c;
    c.model = test::shared_path("models/stories260K/stories260K.gguf");
    c.tensor_parallel_size = tp;
    c.pipeline_parallel_size = pp;
    c.pipeline_micro_batches = mb;
    c.threads = 2;
    c.block_size = 4;
    c.max_num_batched_tokens = 16;
    Engine e(c);
    SamplingParams p;
    p.temperature = 0.8f;
    p.seed = 3;
    p.n = 2;
    p.max_tokens = 12;
    std::vector<int> prompt;
    for (int i = 0; i < 24; ++i) prompt.push_back(1 + (37 * i + 11) % 500);
    std::vector<std::vector<int>> got;
    for (int round = 0; round < 2; ++round) {
      prompt.push_back(300 + round);
      e.add_request_tokens(prompt, p);
      while (e.has_unfinished())
        for (const RequestOutput& o : e.step())
          if (o.finished)
            for (const CompletionOutput& c : o.outputs) got.push_back(c.token_ids);
    }
    *hits = e.telemetry().prefix_cache_hit_tokens_total;
    return got;
  };
  uint64_t hits_one = 0, hits = 0;
  const auto one = run(1, 1, 0, &hits_one);
  ASSERT_EQ(one.size(), 4u);
  EXPECT_GE(hits_one, 24u);
  for (auto [tp, pp, mb] : {std::tuple{1, 2, 2}, std::tuple{1, 2, 4}, std::tuple{2, 2, 3}}) {
    SCOPED_TRACE("tp " + std::to_string(tp) + " x pp " + std::to_string(pp) + ", micro-batches " + std::to_string(mb));
    EXPECT_EQ(run(tp, pp, mb, &hits), one);
    EXPECT_EQ(hits, hits_one);
  }
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

TEST(ParallelRunner, RankTotalsCountAllReducesAndPipelineTransfers) {
  auto file = load_model_file(test::shared_path("models/stories260K/stories260K.gguf"));
  LlamaWeights w = LlamaWeights::bind(*file);
  ParallelRunner r(2, 2, 2, TuningConfig{}, *file, w, nullptr);
  greedy(r, file->config, 3);
  const std::vector<RankTotals> s = r.rank_stats();
  ASSERT_EQ(s.size(), 4u);
  for (const RankTotals& k : s) {
    EXPECT_EQ(k.steps, 3);
    EXPECT_GT(k.allreduce_bytes, 0u);   // two all-reduces per layer
    EXPECT_GT(k.sendrecv_bytes, 0u);
  }
  EXPECT_GT(s[2].recv_seconds, 0.0);   // stage 1 waits for stage 0
  for (const RankTotals& k : s) {
    EXPECT_GE(k.wall_seconds, k.step_seconds - 1e-3);
    EXPECT_GT(k.bubble_fraction(), 0.0);   // stages in turn: each waits for the other
    EXPECT_LT(k.bubble_fraction(), 1.0);
  }
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
