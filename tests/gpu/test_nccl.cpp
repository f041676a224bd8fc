// NCCL (parallel/nccl) on the GPUs of this machine: the communicator's collectives on device
// memory with as many ranks as devices (ranks as threads; made both by ncclCommInitAll and by
// ncclCommInitRank), and the CUDA ranks over NCCL (--dist nccl): TP over every device (>= 2)
// gives the logits and greedy tokens of one rank; with one GPU, one rank through the same runner.
// Skipped without a GPU or where NCCL is not built (LLMWB_NCCL).
#include <thread>

#include "device_collectives.h"
#include "gpu_test.h"
#include "llmwb/distributed.h"
#include "llmwb/llm.h"
#include "llmwb/tuning_config.h"
#include "format/model_file.h"
#include "runner/model_runner.h"
#include "support/test_support.h"
#if LLMWB_HAVE_NCCL
#include "parallel/nccl/nccl_communicator.h"
#endif

using namespace llmwb;
using namespace llmwb::test;

namespace {

#define LLMWB_REQUIRE_NCCL()                                                          \
  do {                                                                                \
    LLMWB_REQUIRE_GPU();                                                              \
    if (!nccl_built()) GTEST_SKIP() << "this build has no NCCL (LLMWB_NCCL=OFF)"; \
  } while (0)

#if LLMWB_HAVE_NCCL

// The shared check (device_collectives.h), each rank's thread on its communicator's device.
void check_collectives(std::vector<std::unique_ptr<NcclCommunicator>>& comms) {
  DeviceRanks ranks;
  ranks.n_ranks = int(comms.size());
  ranks.comm = [&](int r) -> DeviceCommunicator& { return *comms[size_t(r)]; };
  ranks.on_thread = [&](int r) { LLMWB_CUDA(cudaSetDevice(comms[size_t(r)]->device())); };
  ranks.after_sync = [&](int r) { comms[size_t(r)]->check_async_error(); };
  ranks.abort = [&](const std::string& why) {
    for (auto& c : comms) c->abort(why);
  };
  check_device_collectives(ranks, 4096);
}

// libnccl opens (dlopen: the soname, then the toolkit's copy) and reports its version; no GPU needed.
TEST(Nccl, TheLibraryLoadsAndReportsItsVersion) {
  if (!nccl_built()) GTEST_SKIP() << "this build has no NCCL (LLMWB_NCCL=OFF)";
  const std::string v = nccl_version();
  std::printf("NCCL %s\n", v.c_str());
  EXPECT_EQ(v.rfind(std::to_string(NCCL_MAJOR) + ".", 0), 0u) << v;
}

TEST(Nccl, CollectivesOverEveryDeviceWithCommInitAll) {
  LLMWB_REQUIRE_NCCL();
  std::printf("NCCL %s, %d device(s)\n", nccl_version().c_str(), cuda_device_count());
  std::vector<int> devices;
  for (int d = 0; d < cuda_device_count(); ++d) devices.push_back(d);
  auto comms = NcclCommunicator::init_all(devices);
  ASSERT_EQ(comms.size(), devices.size());
  EXPECT_EQ(comms[0]->describe().rfind("nccl 2.", 0), 0u) << comms[0]->describe();
  check_collectives(comms);
}

TEST(Nccl, CollectivesOverEveryDeviceWithCommInitRank) {
  LLMWB_REQUIRE_NCCL();
  const int n = cuda_device_count();
  const std::string id = NcclCommunicator::new_unique_id();
  std::vector<std::unique_ptr<NcclCommunicator>> comms(static_cast<size_t>(n));
  std::vector<std::string> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)   // ncclCommInitRank blocks until every rank has joined
    threads.emplace_back([&, r] {
      try {
        comms[size_t(r)] = std::make_unique<NcclCommunicator>(id, r, n, r);
      } catch (const std::exception& e) {
        errors[size_t(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) ASSERT_EQ(errors[size_t(r)], "") << "rank " << r;
  check_collectives(comms);
}

TEST(Nccl, BadArgumentsAreClearErrors) {
  LLMWB_REQUIRE_NCCL();
  std::string e = error_of([] { NcclCommunicator::init_all({0, 0}); });
  EXPECT_NE(e.find("both on CUDA device 0: NCCL needs one GPU per rank"), std::string::npos) << e;
  e = error_of([] { NcclCommunicator("short", 0, 1, 0); });
  EXPECT_NE(e.find("a unique id is 128 bytes"), std::string::npos) << e;
  auto comms = NcclCommunicator::init_all({0});
  LLMWB_CUDA(cudaSetDevice(0));
  cuda::Stream s;
  cuda::DeviceBuffer x(sizeof(float) * 4);
  e = error_of([&] { comms[0]->send(x.as<float>(), 4, 0, s.get()); });
  EXPECT_NE(e.find("cannot send to rank 0"), std::string::npos) << e;
  comms[0]->abort("a test");
  e = error_of([&] { comms[0]->all_reduce_sum(x.as<float>(), 4, s.get()); });
  EXPECT_NE(e.find("ncclAllReduce: the group was aborted: a test"), std::string::npos) << e;
}

#endif

struct GreedyRun {
  std::vector<int> tokens;
  std::vector<std::vector<float>> logits;
};

// One prompt of 9 tokens, then greedy one token at a time.
GreedyRun greedy(ModelRunner& runner, const ModelConfig& c, int steps) {
  runner.allocate_kv(8, 8, KVDType::F32);
  const std::vector<int> table{3, 1, 6};
  std::vector<int> seq{1, 5, 9, 17, 33, 4, 100 % c.vocab_size, 2, 8};
  int pos = 0;
  GreedyRun out;
  for (int s = 0; s < steps; ++s) {
    ForwardBatch b;
    ForwardSeq fs;
    fs.n_tokens = int(seq.size()) - pos;
    fs.start_pos = pos;
    fs.decode = s > 0;
    fs.block_table = &table;
    fs.logits_row = b.num_logit_rows++;
    b.tokens.assign(seq.begin() + pos, seq.end());
    b.seqs.push_back(fs);
    std::vector<float> logits(size_t(c.vocab_size), NAN);
    runner.execute(b, logits.data(), -1, nullptr, nullptr);
    out.logits.push_back(logits);
    pos = int(seq.size());
    seq.push_back(int(std::max_element(logits.begin(), logits.end()) - logits.begin()));
    out.tokens.push_back(seq.back());
  }
  return out;
}

GreedyRun run(const std::string& path, int tp, const std::string& dist) {
  auto file = load_model_file(path);
  auto r = make_model_runner("cuda", 2, TuningConfig{}, *file, LlamaWeights::bind(*file), nullptr,
                             ParallelLayout{tp, 1, dist, ""});
  if (dist == "nccl") {
    EXPECT_NE(r->describe().find("(nccl 2."), std::string::npos) << r->describe();
  }
  return greedy(*r, file->config, 6);
}

// TP over every device (the largest of 8, 4, 2 that fits; 8 KV heads), else one rank on NCCL.
TEST(Nccl, TensorParallelRanksOverEveryDeviceMatchOneRank) {
  LLMWB_REQUIRE_NCCL();
  const int gpus = cuda_device_count();
  int tp = 1;
  for (int t : {8, 4, 2})
    if (t <= gpus) {
      tp = t;
      break;
    }
  std::printf("NCCL tensor parallel over %d of %d GPU(s)\n", tp, gpus);
  const std::string m = make_test_model("nccl", "gqa", 256, 512, 16, 8, 700, DType::F32, 51);
  const GreedyRun one = run(m, 1, "threads");
  const GreedyRun many = run(m, tp, "nccl");
  EXPECT_EQ(many.tokens, one.tokens);
  for (size_t s = 0; s < one.logits.size(); ++s) EXPECT_LT(rel_error(many.logits[s], one.logits[s]), 1e-5) << "step " << s;
  // And through the engine: stories260K's greedy text.
  EngineConfig c;
  c.model = shared_path("models/stories260K/stories260K.gguf");
  c.backend = "cuda";
  c.max_model_len = 256;
  c.dist = "nccl";
  c.tensor_parallel_size = std::min(tp, 4);   // 4 KV heads
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 40;
  LLM nccl(c);
  c.dist = "threads";
  c.tensor_parallel_size = 1;
  LLM ref(c);
  EXPECT_EQ(nccl.generate({"Once upon a time"}, p)[0].outputs[0].token_ids,
            ref.generate({"Once upon a time"}, p)[0].outputs[0].token_ids);
}

}  // namespace
