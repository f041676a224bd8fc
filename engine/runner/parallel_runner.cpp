#include "runner/parallel_runner.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <mutex>
#include <thread>

#include "backend/cpu/matmul.h"
#include "llmwb/errors.h"
#include "llmwb/tuning_config.h"

namespace llmwb {

struct ParallelRunner::Rank {
  int t = 0, p = 0;
  int first_layer = 0;
  WeightShard shard;
  std::unique_ptr<CpuBackend> backend;
  std::unique_ptr<LlamaModel> model;
  std::unique_ptr<KVCache> kv;
  std::unique_ptr<TimedCommunicator> tp_comm;     // over its stage's group
  std::unique_ptr<TimedCommunicator> world_comm;  // over all ranks
  std::vector<float> act_in, act_out, logits;     // the residual stream in / out; its vocab range's logits
  std::exception_ptr error;
  RankStats stats;
  RankTelemetry last;   // the last step
};

namespace {

uint64_t available_memory_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 4ull << 30;
}

}  // namespace

ParallelRunner::ParallelRunner(int tensor_parallel_size, int pipeline_parallel_size, int threads,
                               const TuningConfig& tuning, ModelFile& file, const LlamaWeights& weights,
                               const RunnerProgress& progress)
    : tp_(tensor_parallel_size), pp_(pipeline_parallel_size), vocab_size_(file.config.vocab_size) {
  const ModelConfig& c = file.config;
  if (tp_ < 1) throw Error("tensor_parallel_size", "must be >= 1, got " + std::to_string(tp_));
  if (pp_ < 1) throw Error("pipeline_parallel_size", "must be >= 1, got " + std::to_string(pp_));
  if (c.n_kv_heads % tp_ != 0)
    throw Error("tensor_parallel_size", std::to_string(tp_) + " does not divide the model's " +
                                            std::to_string(c.n_kv_heads) +
                                            " KV heads (each rank holds whole KV heads and their query heads)");
  if (pp_ > c.n_layers)
    throw Error("pipeline_parallel_size", std::to_string(pp_) + " stages for the model's " +
                                              std::to_string(c.n_layers) + " layers: at most one stage per layer");
  if (!tuning.simd.empty()) cpu::set_simd_level(cpu::simd_level_at_most(tuning.simd));
  const int total = threads > 0 ? threads : int(std::max(1u, std::thread::hardware_concurrency()));
  // Stages run one after the other (no micro-batches), so a stage's ranks share all the threads.
  threads_per_rank_ = std::max(1, total / tp_);
  world_ = std::make_unique<ThreadGroup>(tp_ * pp_);
  for (int p = 0; p < pp_; ++p) tp_groups_.push_back(std::make_unique<ThreadGroup>(tp_));
  for (int p = 0; p < pp_; ++p) {
    const auto [l0, l1] = split_range(c.n_layers, pp_, p, 1, "pipeline_parallel_size", "the layers");
    for (int t = 0; t < tp_; ++t) {
      if (progress && !progress(double(p * tp_ + t) / double(tp_ * pp_),
                                "preparing the shard of rank " + std::to_string(p * tp_ + t)))
        throw Error(file.path, "loading cancelled");
      auto r = std::make_unique<Rank>();
      r->t = t;
      r->p = p;
      r->first_layer = int(l0);
      r->stats.tp_rank = t;
      r->stats.pp_stage = p;
      r->shard = make_weight_shard(c, weights, ShardSpec{t, tp_, int(l0), int(l1 - l0)});
      r->backend = std::make_unique<CpuBackend>(threads_per_rank_, tuning.float_panels);
      for (const LlamaLayerWeights& L : r->shard.weights.layers)
        for (const TensorView* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w1, &L.w2, &L.w3}) r->backend->prepare(*w);
      if (p == pp_ - 1) r->backend->prepare(r->shard.weights.output);
      r->model = std::make_unique<LlamaModel>(r->shard.config, r->shard.weights, *r->backend);
      r->tp_comm = std::make_unique<TimedCommunicator>(tp_groups_[size_t(p)]->communicator(t));
      r->world_comm = std::make_unique<TimedCommunicator>(world_->communicator(p * tp_ + t));
      if (tp_ > 1) r->model->set_tensor_parallel(r->tp_comm.get());
      ranks_.push_back(std::move(r));
    }
  }
  workers_ = std::make_unique<ThreadPool>(tp_ * pp_);
}

ParallelRunner::~ParallelRunner() = default;

std::string ParallelRunner::describe() const {
  return "tp " + std::to_string(tp_) + " x pp " + std::to_string(pp_) + " ranks (in-process), each " +
         ranks_[0]->backend->name();
}

uint64_t ParallelRunner::kv_memory_available() const { return available_memory_bytes(); }

void ParallelRunner::allocate_kv(int num_blocks, int block_size, KVDType dtype) {
  for (auto& r : ranks_) {
    const ModelConfig& c = r->shard.config;
    r->kv = std::make_unique<KVCache>(c.n_layers, num_blocks, block_size, c.n_kv_heads, c.head_dim, dtype);
  }
}

void ParallelRunner::copy_blocks(std::span<const BlockCopy> copies) {
  for (auto& r : ranks_)
    for (const BlockCopy& c : copies) r->kv->copy_block(c.src, c.dst);
}

void ParallelRunner::run_rank(Rank& r, const ForwardBatch& batch, int record_layer, AttentionRecord* record) {
  const auto t0 = std::chrono::steady_clock::now();
  const double ar0 = r.tp_comm->seconds;
  const uint64_t arb0 = r.tp_comm->bytes;
  const int n = static_cast<int>(batch.tokens.size());
  const int64_t rows = int64_t(n) * r.shard.config.dim;
  const bool first = r.p == 0, last = r.p == pp_ - 1;
  double recv_s = 0;
  if (!first) {
    r.act_in.resize(size_t(rows));
    const auto w0 = std::chrono::steady_clock::now();
    r.world_comm->recv(r.act_in.data(), rows, (r.p - 1) * tp_ + r.t);
    recv_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  }
  if (!last) r.act_out.resize(size_t(rows));
  r.model->set_stage_io(first ? nullptr : r.act_in.data(), last ? nullptr : r.act_out.data());
  float* logits = nullptr;
  if (last) {
    r.logits.resize(size_t(batch.num_logit_rows) * size_t(r.shard.config.vocab_size));
    logits = r.logits.data();
  }
  // The attention heatmap: only a rank that holds all of the recorded layer's heads records it
  // (tensor_parallel_size 1: the stage that holds the layer).
  const int local = record_layer - r.first_layer;
  const bool mine = record && tp_ == 1 && local >= 0 && local < r.shard.config.n_layers;
  r.model->forward(batch, *r.kv, logits, mine ? local : -1, mine ? record : nullptr);
  if (!last) r.world_comm->send(r.act_out.data(), rows, (r.p + 1) * tp_ + r.t);
  RankTelemetry& k = r.last;
  k.tp_rank = r.t;
  k.pp_stage = r.p;
  k.step_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  k.allreduce_seconds = r.tp_comm->seconds - ar0;
  k.allreduce_bytes = r.tp_comm->bytes - arb0;
  k.recv_seconds = recv_s;
  k.sendrecv_bytes = pp_ > 1 ? uint64_t(rows) * sizeof(float) * uint64_t((first ? 0 : 1) + (last ? 0 : 1)) : 0;
  k.compute_seconds = k.step_seconds - k.allreduce_seconds - k.recv_seconds;
  RankStats& s = r.stats;
  ++s.steps;
  s.step_seconds += k.step_seconds;
  s.allreduce_seconds += k.allreduce_seconds;
  s.allreduce_bytes += k.allreduce_bytes;
  s.recv_seconds += k.recv_seconds;
  s.sendrecv_bytes += k.sendrecv_bytes;
}

void ParallelRunner::execute(const ForwardBatch& batch, float* logits, int record_layer, AttentionRecord* record,
                             DeviceSampled*) {
  if (!ranks_[0]->kv) throw Error("parallel", "allocate_kv must come before execute");
  workers_->run([&](int ith, int) {
    Rank& r = *ranks_[size_t(ith)];
    r.error = nullptr;
    try {
      run_rank(r, batch, record_layer, record);
    } catch (...) {
      r.error = std::current_exception();
      const char* why = "a rank failed";
      try {
        throw;
      } catch (const std::exception& e) {
        why = e.what();
        world_->abort(why);
        tp_groups_[size_t(r.p)]->abort(why);
      } catch (...) {
        world_->abort(why);
        tp_groups_[size_t(r.p)]->abort(why);
      }
    }
  });
  for (auto& r : ranks_)
    if (r->error) std::rethrow_exception(r->error);
  // Gather the last stage's vocabulary ranges into whole logits rows.
  const int m = batch.num_logit_rows;
  const int64_t vocab = vocab_size_;
  for (int t = 0; t < tp_; ++t) {
    const Rank& r = *ranks_[size_t((pp_ - 1) * tp_ + t)];
    const int64_t vl = r.shard.config.vocab_size;
    for (int i = 0; i < m; ++i)
      std::copy(r.logits.data() + int64_t(i) * vl, r.logits.data() + int64_t(i + 1) * vl,
                logits + int64_t(i) * vocab + r.shard.vocab_begin);
  }
}

std::vector<RankTelemetry> ParallelRunner::rank_telemetry() const {
  std::vector<RankTelemetry> out;
  for (const auto& r : ranks_) out.push_back(r->last);
  return out;
}

std::vector<RankStats> ParallelRunner::rank_stats() const {
  std::vector<RankStats> out;
  for (const auto& r : ranks_) out.push_back(r->stats);
  return out;
}

}  // namespace llmwb
