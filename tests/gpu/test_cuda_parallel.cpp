// Tensor and pipeline parallel CUDA ranks (cuda_parallel_runner.h) over the host-staged
// communicator (--dist threads): TP 2, PP 2 and TP 2 x PP 2 give the logits of the CPU forward pass
// and of one CUDA rank, and its greedy tokens, on a random GQA model and on stories260K through
// the engine; the device communicator's collectives on device memory; the per-rank telemetry's
// byte counts; and the errors of a layout, a dist or a build that cannot run. On the CPU
// emulator (tests/cuda_emu) every rank shares the one emulated device.
#include <cmath>
#include <thread>

#include "backend/cpu/cpu_backend.h"
#include "device_collectives.h"
#include "gpu_test.h"
#include "kv/kv_cache.h"
#include "llmwb/distributed.h"
#include "llmwb/engine.h"
#include "llmwb/llm.h"
#include "llmwb/tuning_config.h"
#include "model/llama_model.h"
#include "format/model_file.h"
#include "parallel/cuda/host_staged_communicator.h"
#include "parallel/thread_communicator.h"
#include "runner/cpu_runner.h"
#include "runner/cuda/cuda_model.h"
#include "runner/model_runner.h"
#include "runner/weight_shards.h"
#include "support/runner_greedy.h"
#include "support/test_support.h"

using namespace llmwb;
using namespace llmwb::test;

namespace {

// Two sequences, each with its own blocks, greedy for `steps` steps through `runner`
// (support/runner_greedy.h).
GreedyRun greedy(ModelRunner& runner, const ModelConfig& c, int steps) {
  const GreedySetup setup{8, 8, {{1, 5, 9, 17, 33, 4, 100 % c.vocab_size, 2, 8}, {1, 7, 3}}, {{5, 1, 2}, {7, 0, 3}}};
  return greedy_two_sequences(runner, c.vocab_size, setup, steps);
}

// The worst step's ||a - b|| / ||b|| over its logits rows (+inf for a NaN).
double worst_error(const GreedyRun& a, const GreedyRun& b) {
  double worst = 0;
  for (size_t s = 0; s < a.logits.size() && s < b.logits.size(); ++s) worst = std::max(worst, rel_error(a.logits[s], b.logits[s]));
  return worst;
}

GreedyRun run(const std::string& path, const std::string& backend, int tp, int pp, int steps,
        const std::string& dist = "threads") {
  auto file = load_model_file(path);
  LlamaWeights w = LlamaWeights::bind(*file);
  TuningConfig tuning;
  auto r = make_model_runner(backend, 2, tuning, *file, std::move(w), nullptr, ParallelLayout{tp, pp, dist, ""});
  return greedy(*r, file->config, steps);
}

// The CPU forward pass (one rank), the CUDA model (one rank), then each layout on CUDA ranks;
// cpu_tolerance < 0: no comparison with the CPU.
void expect_layouts_match(const std::string& path, const std::vector<std::pair<int, int>>& layouts, int steps,
                          double cpu_tolerance = 1e-5, double one_rank_tolerance = 1e-5) {
  const GreedyRun cpu = run(path, "cpu", 1, 1, steps);
  const GreedyRun one = run(path, "cuda", 1, 1, steps);
  if (cpu_tolerance >= 0) {
    EXPECT_LT(worst_error(one, cpu), cpu_tolerance) << "one CUDA rank against the CPU";
  }
  for (auto [tp, pp] : layouts) {
    SCOPED_TRACE("tp " + std::to_string(tp) + " x pp " + std::to_string(pp));
    const GreedyRun many = run(path, "cuda", tp, pp, steps);
    EXPECT_EQ(many.tokens, one.tokens);
    const double e_cpu = worst_error(many, cpu), e_one = worst_error(many, one);
    std::printf("tp %d x pp %d: logits vs the CPU %.3g, vs one CUDA rank %.3g\n", tp, pp, e_cpu, e_one);
    if (cpu_tolerance >= 0) {
      EXPECT_LT(e_cpu, cpu_tolerance);
    }
    EXPECT_LT(e_one, one_rank_tolerance);
  }
}

// dim 128, 8 query heads over 4 KV heads (head_dim 16; TP 2: 4 heads over 2 KV heads per rank,
// TP 4: 2 over 1), hidden 192, vocab 301 (TP 2: 150 and 151 rows), 2 layers (PP 2: one each).
TEST(CudaParallel, RandomGqaModelTp2Tp4Pp2AndTp2xPp2MatchOneRankAndTheCpu) {
  LLMWB_REQUIRE_GPU();
  const std::string m = make_test_model("cuda_parallel", "gqa", 128, 192, 8, 4, 301, DType::F32, 41);
  expect_layouts_match(m, {{2, 1}, {4, 1}, {1, 2}, {2, 2}}, 4);
}

// Q8_0 shards on the device: wo's and w2's columns split on the blocks of 32 (head_dim 32, hidden
// 128), uploaded as Q8_0. TP changes only the order of the all-reduce's sum (~1e-7), but the
// 12-row prefill goes through cuBLAS with activations rounded to fp16 (cuda_matmul.h), where that
// ~1e-7 flips an occasional rounding: 4.3e-5 from one rank (emulated); decode (the GEMV, fp32)
// adds none. A wrong block split or scale would be off by O(1). The CPU quantizes its activations
// to int8 (1-2 % away, tests/gpu/test_cuda_model.cpp), so it is not the reference here.
TEST(CudaParallel, Q8ShardsOnBlockBoundariesMatchOneRank) {
  LLMWB_REQUIRE_GPU();
  const std::string m = make_test_model("cuda_parallel", "q8", 128, 128, 4, 2, 320, DType::Q8_0, 44);
  expect_layouts_match(m, {{2, 1}, {2, 2}}, 3, -1, 1e-3);
}

// 8 query heads, 4 KV heads, hidden 172, 5 layers (stages of 2 and 3).
TEST(CudaParallel, Stories260KTp2Pp2AndTp2xPp2MatchOneRankAndTheCpu) {
  LLMWB_REQUIRE_GPU();
  expect_layouts_match(shared_path("models/stories260K/stories260K.gguf"), {{2, 1}, {1, 2}, {2, 2}}, 4);
}

EngineConfig stories(int tp, int pp) {
  EngineConfig c;
  c.model = shared_path("models/stories260K/stories260K.gguf");
  c.backend = "cuda";
  c.threads = 2;
  c.max_model_len = 128;
  c.tensor_parallel_size = tp;
  c.pipeline_parallel_size = pp;
  return c;
}

// Through the engine (scheduler, paged K/V, prefix caching): the greedy tokens of one CUDA rank,
// and each rank's telemetry.
TEST(CudaParallel, TheEngineOnTp2xPp2GeneratesTheGreedyTokensOfOneRank) {
  LLMWB_REQUIRE_GPU();
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 12;
  auto tokens = [&](int tp, int pp) {
    LLM llm(stories(tp, pp));
    auto out = llm.generate({"Once upon a time", "The cat"}, p);
    EXPECT_TRUE(out[0].error.empty()) << out[0].error;
    std::vector<int> t = out[0].outputs[0].token_ids;
    t.insert(t.end(), out[1].outputs[0].token_ids.begin(), out[1].outputs[0].token_ids.end());
    return t;
  };
  const std::vector<int> one = tokens(1, 1);
  EXPECT_EQ(one.size(), 24u);
  EXPECT_EQ(tokens(2, 2), one);
}

TEST(CudaParallel, StepTelemetryCountsEachRanksAllReduceAndPipelineBytes) {
  LLMWB_REQUIRE_GPU();
  Engine e(stories(2, 2));
  EXPECT_NE(e.model_info().backend.find("tp 2 x pp 2 ranks (host-staged (threads))"), std::string::npos)
      << e.model_info().backend;
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
  EXPECT_EQ(t.ranks[3].sendrecv_bytes, 3 * row);
  EXPECT_EQ(t.ranks[3].pp_stage, 1);
  EXPECT_EQ(t.ranks[3].tp_rank, 1);
  for (const RankTelemetry& r : t.ranks) {
    SCOPED_TRACE("rank tp " + std::to_string(r.tp_rank) + " pp " + std::to_string(r.pp_stage));
    EXPECT_GT(r.step_seconds, 0.0);
    EXPECT_GT(r.allreduce_seconds, 0.0);
    EXPECT_LE(r.allreduce_seconds + r.recv_seconds, r.step_seconds * 1.01);
    // The Parallelism view's lanes: spans in time order, not overlapping, the all-reduces' as
    // many and as long as counted, the stage hand-off a Send on stage 0 and a Recv on stage 1.
    ASSERT_FALSE(r.spans.empty());
    double allreduce = 0;
    uint64_t allreduce_bytes = 0;
    int sends = 0, recvs = 0;
    for (size_t i = 0; i < r.spans.size(); ++i) {
      const RankSpan& sp = r.spans[i];
      EXPECT_GE(sp.begin, 0.0f);
      EXPECT_GE(sp.end, sp.begin);
      if (i > 0) {
        EXPECT_GE(sp.begin, r.spans[i - 1].end - 1e-6f) << "span " << i;
      }
      if (sp.kind == RankSpan::Kind::AllReduce) allreduce += sp.end - sp.begin, allreduce_bytes += sp.bytes;
      sends += sp.kind == RankSpan::Kind::Send;
      recvs += sp.kind == RankSpan::Kind::Recv;
    }
    EXPECT_NEAR(allreduce, r.allreduce_seconds, 1e-4 + 1e-3 * r.allreduce_seconds);
    EXPECT_EQ(allreduce_bytes, r.allreduce_bytes);
    EXPECT_EQ(sends, r.pp_stage == 0 ? 1 : 0);
    EXPECT_EQ(recvs, r.pp_stage == 1 ? 1 : 0);
    // Stage 1 receives before its first all-reduce; stage 0 sends after its last.
    auto first_of = [&](RankSpan::Kind k) {
      for (size_t i = 0; i < r.spans.size(); ++i)
        if (r.spans[i].kind == k) return int(i);
      return -1;
    };
    auto last_of = [&](RankSpan::Kind k) {
      for (size_t i = r.spans.size(); i-- > 0;)
        if (r.spans[i].kind == k) return int(i);
      return -1;
    };
    if (r.pp_stage == 1) {
      EXPECT_LT(first_of(RankSpan::Kind::Recv), first_of(RankSpan::Kind::AllReduce));
    } else {
      EXPECT_GT(first_of(RankSpan::Kind::Send), last_of(RankSpan::Kind::AllReduce));
    }
  }
}

// The host-staged communicator on device buffers: the shared check (device_collectives.h) with
// three ranks as threads of one ThreadGroup.
TEST(CudaParallel, HostStagedCollectivesOnDeviceMemory) {
  LLMWB_REQUIRE_GPU();
  ThreadGroup group(3);
  std::vector<std::unique_ptr<HostStagedCommunicator>> comms;
  for (int r = 0; r < 3; ++r) comms.push_back(std::make_unique<HostStagedCommunicator>(group.communicator(r), "threads"));
  DeviceRanks ranks;
  ranks.n_ranks = 3;
  ranks.comm = [&](int r) -> DeviceCommunicator& { return *comms[size_t(r)]; };
  ranks.abort = [&](const std::string& why) { group.abort(why); };
  check_device_collectives(ranks, 1000);
}

// A stage that fails mid-step ends the other with an error instead of leaving it waiting: stage 1
// is given a 16-token step while stage 0 runs 8 of them, so stage 1's receive finds half the
// rows it expects, fails and aborts the group, and stage 0, blocked in its send, gets an error.
TEST(CudaParallel, AStageThatFailsMidStepEndsTheOtherWithAnError) {
  LLMWB_REQUIRE_GPU();
  auto file = load_model_file(shared_path("models/stories260K/stories260K.gguf"));
  const ModelConfig& c = file->config;
  const LlamaWeights w = LlamaWeights::bind(*file);
  ThreadGroup world(2);
  HostStagedCommunicator w0(world.communicator(0), "threads"), w1(world.communicator(1), "threads");
  const WeightShard s0 = make_weight_shard(c, w, ShardSpec{0, 1, 0, 2}), s1 = make_weight_shard(c, w, ShardSpec{0, 1, 2, 3});
  cuda::CudaModel m0(s0.config, s0.weights), m1(s1.config, s1.weights);
  m0.set_pipeline_stage(&w0, -1, 1);
  m1.set_pipeline_stage(&w1, 0, -1);
  m0.allocate_kv(4, 8);
  m1.allocate_kv(4, 8);
  const std::vector<int> table{0, 1, 2, 3};
  auto batch = [&](int n) {
    ForwardBatch b;
    for (int i = 0; i < n; ++i) b.tokens.push_back(1 + i);
    ForwardSeq fs;
    fs.n_tokens = n;
    fs.block_table = &table;
    fs.logits_row = b.num_logit_rows++;
    b.seqs.push_back(fs);
    return b;
  };
  const ForwardBatch b8 = batch(8), b16 = batch(16);
  std::vector<float> logits(size_t(c.vocab_size));
  std::string e0, e1;
  std::thread a([&] {
    e0 = error_of([&] {
      try {
        m0.forward(b8, nullptr, -1, nullptr);
      } catch (const std::exception& x) {
        world.abort(std::string("stage 0: ") + x.what());
        throw;
      }
    });
  });
  std::thread b([&] {
    e1 = error_of([&] {
      try {
        m1.forward(b16, logits.data(), -1, nullptr);
      } catch (const std::exception& x) {
        world.abort(std::string("stage 1: ") + x.what());
        throw;
      }
    });
  });
  a.join();
  b.join();
  std::printf("stage 0: %s\nstage 1: %s\n", e0.c_str(), e1.c_str());
  EXPECT_NE(e1.find("recv"), std::string::npos) << e1;
  EXPECT_NE(e0.find("another rank failed"), std::string::npos) << e0;
}

TEST(CudaParallel, LayoutsDistsAndBuildsThatCannotRunAreClearErrors) {
  LLMWB_REQUIRE_GPU();
  const std::string m = make_test_model("cuda_parallel", "gqa2", 64, 128, 8, 2, 301, DType::F32, 42);
  std::string e = error_of([&] { run(m, "cuda", 4, 1, 1); });
  EXPECT_NE(e.find("tensor_parallel_size: 4 does not divide the model's 2 KV heads"), std::string::npos) << e;
  e = error_of([&] { run(m, "cuda", 1, 3, 1); });
  EXPECT_NE(e.find("pipeline_parallel_size"), std::string::npos) << e;
  e = error_of([&] { run(m, "cuda", 2, 1, 1, "carrier-pigeon"); });
  EXPECT_NE(e.find("dist: 'carrier-pigeon' is not a way for ranks to talk"), std::string::npos) << e;
  e = error_of([&] { run(m, "cpu", 2, 1, 1, "nccl"); });
  EXPECT_NE(e.find("dist: nccl runs the cuda backend's ranks"), std::string::npos) << e;
  if (!nccl_built()) {
    e = error_of([&] { run(m, "cuda", 2, 1, 1, "nccl"); });
    EXPECT_NE(e.find("this build has no NCCL"), std::string::npos) << e;
  } else if (cuda_device_count() < 64) {
    e = error_of([&] { run(make_test_model("cuda_parallel", "wide", 64, 128, 64, 64, 301, DType::F32, 43), "cuda",
                           64, 1, 1, "nccl"); });
    EXPECT_NE(e.find("nccl runs one rank per GPU: tp 64 x pp 1 = 64 ranks"), std::string::npos) << e;
  }
  // The token inspector records a model of one rank.
  auto file = load_model_file(m);
  auto r = make_model_runner("cuda", 2, TuningConfig{}, *file, LlamaWeights::bind(*file), nullptr,
                             ParallelLayout{2, 1, "threads", ""});
  r->allocate_kv(4, 8, KVDType::F32);
  const std::vector<int> table{0};
  ForwardBatch b;
  ForwardSeq fs;
  fs.n_tokens = 1;
  fs.block_table = &table;
  fs.logits_row = b.num_logit_rows++;
  b.tokens = {1};
  b.seqs.push_back(fs);
  std::vector<float> logits(size_t(file->config.vocab_size));
  StepRecording rec;
  e = error_of([&] { r->inspect(b, logits.data(), rec); });
  EXPECT_NE(e.find("inspect"), std::string::npos) << e;
}

}  // namespace
