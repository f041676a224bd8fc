#include "runner/cuda_parallel_runner.h"

#include "llmwb/distributed.h"
#include "llmwb/errors.h"

#if LLMWB_HAVE_CUDA
#include <algorithm>
#include <chrono>
#include <exception>
#include <map>

#include "backend/cpu/thread_pool.h"
#include "parallel/cuda/host_staged_communicator.h"
#include "parallel/thread_communicator.h"
#include "runner/cuda/cuda_model.h"
#include "runner/exception_text.h"
#include "runner/weight_shards.h"
#if LLMWB_HAVE_NCCL
#include "parallel/nccl/nccl_communicator.h"
#endif
#endif

namespace llmwb {

bool nccl_built() { return LLMWB_HAVE_NCCL != 0; }

#if LLMWB_HAVE_CUDA

namespace {

// A DeviceCommunicator that forwards to another and measures, with events around each call on
// the stream, the device time its rank spent in communication (waiting for the peers included)
// and the bytes of payload. read_step() after the stream has been synchronized.
class TimedDeviceCommunicator final : public DeviceCommunicator {
 public:
  explicit TimedDeviceCommunicator(DeviceCommunicator& inner) : c_(inner) {}
  int rank() const override { return c_.rank(); }
  int size() const override { return c_.size(); }
  std::string describe() const override { return c_.describe(); }
  void all_reduce_sum(float* x, int64_t n, cudaStream_t s) override {
    timed(Kind::AllReduce, n, s, [&] { c_.all_reduce_sum(x, n, s); });
  }
  void all_gather(const float* in, int64_t n, float* out, cudaStream_t s) override {
    timed(Kind::AllReduce, n, s, [&] { c_.all_gather(in, n, out, s); });
  }
  void send(const float* x, int64_t n, int to, cudaStream_t s) override {
    timed(Kind::Send, n, s, [&] { c_.send(x, n, to, s); });
  }
  void recv(float* x, int64_t n, int from, cudaStream_t s) override {
    timed(Kind::Recv, n, s, [&] { c_.recv(x, n, from, s); });
  }
  void abort(const std::string& why) override { c_.abort(why); }

  enum class Kind { AllReduce, Send, Recv };
  struct Totals {
    double seconds[3] = {0, 0, 0};
    uint64_t bytes[3] = {0, 0, 0};
  };
  // The step's calls since the last read (the stream's work done): their totals, and a span each
  // into `spans`, timed from `start` (an event recorded on the same stream before them), which
  // was `offset` seconds into the step.
  Totals read_step(const cuda::Event& start, double offset, std::vector<RankSpan>& spans) {
    Totals t;
    for (size_t i = 0; i < used_; ++i) {
      const Call& c = calls_[i];
      const double b = double(c.begin->ms_since(start)) / 1e3, e = double(c.end->ms_since(start)) / 1e3;
      t.seconds[int(c.kind)] += e - b;
      t.bytes[int(c.kind)] += c.bytes;
      RankSpan sp;
      sp.kind = c.kind == Kind::AllReduce ? RankSpan::Kind::AllReduce
                : c.kind == Kind::Send    ? RankSpan::Kind::Send
                                          : RankSpan::Kind::Recv;
      sp.begin = float(offset + b);
      sp.end = float(offset + e);
      sp.bytes = c.bytes;
      spans.push_back(sp);
    }
    used_ = 0;
    return t;
  }

 private:
  struct Call {
    std::unique_ptr<cuda::Event> begin, end;
    Kind kind = Kind::AllReduce;
    uint64_t bytes = 0;
  };
  template <class F>
  void timed(Kind kind, int64_t n, cudaStream_t s, F f) {
    if (used_ == calls_.size()) calls_.push_back({std::make_unique<cuda::Event>(), std::make_unique<cuda::Event>()});
    Call& c = calls_[used_];
    c.kind = kind;
    c.bytes = uint64_t(std::max<int64_t>(n, 0)) * sizeof(float);
    c.begin->record(s);
    f();
    c.end->record(s);
    ++used_;
  }
  DeviceCommunicator& c_;
  std::vector<Call> calls_;   // reused from step to step (events of the rank's device)
  size_t used_ = 0;
};

struct CudaRank {
  int t = 0, p = 0, device = 0, first_layer = 0;
  WeightShard shard;
  std::unique_ptr<cuda::CudaModel> model;
  std::unique_ptr<TimedDeviceCommunicator> tp_comm, world_comm;
  std::vector<float> logits;   // the last stage's: rows of this rank's vocabulary range
  std::unique_ptr<cuda::Event> start;   // recorded on the model's stream as the rank's step starts
  RankTelemetry last;
};

class CudaParallelRunner final : public ModelRunner {
 public:
  CudaParallelRunner(int tp, int pp, const std::string& dist, const TuningConfig& tuning, ModelFile& file,
                     const LlamaWeights& weights, const RunnerProgress& progress);
  ~CudaParallelRunner() override;
  std::string describe() const override;
  RunnerCapabilities capabilities() const override { return {}; }
  uint64_t kv_memory_available() const override;
  void allocate_kv(int num_blocks, int block_size, KVDType dtype) override;
  void copy_blocks(std::span<const BlockCopy> copies) override;
  void execute(const ForwardBatch& batch, float* logits, int record_layer, AttentionRecord* record,
               DeviceSampled* sampled) override;
  std::vector<RankTelemetry> rank_telemetry() const override;

 private:
  void abort_all(const std::string& why);
  int tp_, pp_;
  int vocab_size_, n_layers_, n_kv_heads_;
  std::string dist_;
  // dist "threads": the host groups under the host-staged communicators.
  std::unique_ptr<ThreadGroup> host_world_;
  std::vector<std::unique_ptr<ThreadGroup>> host_tp_;
  // Every rank's device communicators (world: the stages' send / recv; tp: its stage's all-reduces).
  std::vector<std::unique_ptr<DeviceCommunicator>> world_comms_, tp_comms_;
  std::vector<std::unique_ptr<CudaRank>> ranks_;   // stage-major: rank p * tp + t
  std::unique_ptr<ThreadPool> workers_;            // one thread per rank
};

CudaParallelRunner::CudaParallelRunner(int tp, int pp, const std::string& dist, const TuningConfig& tuning,
                                       ModelFile& file, const LlamaWeights& weights, const RunnerProgress& progress)
    : tp_(tp), pp_(pp), vocab_size_(file.config.vocab_size), n_layers_(file.config.n_layers),
      n_kv_heads_(file.config.n_kv_heads), dist_(dist) {
  const ModelConfig& c = file.config;
  check_parallel_layout(c, tp_, pp_);
  const std::string why = cuda_unavailable_reason();
  if (!why.empty()) throw Error("backend", "'cuda' is not available: " + why);
  const int world = tp_ * pp_;
  const int gpus = cuda_device_count();
  std::vector<int> devices;
  for (int r = 0; r < world; ++r) devices.push_back(r % std::max(1, gpus));
  if (dist_ == "nccl") {
#if LLMWB_HAVE_NCCL
    if (world > gpus)
      throw Error("dist", "nccl runs one rank per GPU: tp " + std::to_string(tp_) + " x pp " + std::to_string(pp_) +
                              " = " + std::to_string(world) + " ranks, " + std::to_string(gpus) +
                              " GPU(s) here (--dist threads runs several ranks on one GPU, host-staged)");
    if (pp_ > 1) {
      for (auto& comm : NcclCommunicator::init_all(devices)) world_comms_.push_back(std::move(comm));
    }
    if (tp_ > 1) {
      for (int p = 0; p < pp_; ++p) {
        const std::vector<int> stage(devices.begin() + p * tp_, devices.begin() + (p + 1) * tp_);
        for (auto& comm : NcclCommunicator::init_all(stage)) tp_comms_.push_back(std::move(comm));
      }
    }
#else
    throw Error("dist", "this build has no NCCL (configure with the CUDA toolkit's nccl.h and libnccl, LLMWB_NCCL=ON; "
                        "--dist threads runs the CUDA ranks host-staged)");
#endif
  } else if (dist_ == "threads") {
    host_world_ = std::make_unique<ThreadGroup>(world);
    for (int p = 0; p < pp_; ++p) host_tp_.push_back(std::make_unique<ThreadGroup>(tp_));
    if (pp_ > 1)
      for (int r = 0; r < world; ++r)
        world_comms_.push_back(std::make_unique<HostStagedCommunicator>(host_world_->communicator(r), "threads"));
    if (tp_ > 1)
      for (int r = 0; r < world; ++r)
        tp_comms_.push_back(
            std::make_unique<HostStagedCommunicator>(host_tp_[size_t(r / tp_)]->communicator(r % tp_), "threads"));
  } else {
    throw Error("dist", "'" + dist_ + "' does not run cuda ranks (threads or nccl)");
  }
  for (int p = 0; p < pp_; ++p)
    for (int t = 0; t < tp_; ++t) {
      const int r = p * tp_ + t;
      if (progress && !progress(double(r) / double(world), "uploading the shard of rank " + std::to_string(r) +
                                                               " to GPU " + std::to_string(devices[size_t(r)])))
        throw Error(file.path, "loading cancelled");
      auto k = std::make_unique<CudaRank>();
      k->t = t, k->p = p, k->device = devices[size_t(r)];
      const auto [l0, l1] = split_range(c.n_layers, pp_, p, 1, "pipeline_parallel_size", "the layers");
      k->first_layer = int(l0);
      k->shard = make_weight_shard(c, weights, ShardSpec{t, tp_, int(l0), int(l1 - l0)});
      // Only the first stage embeds and only the last computes logits: the others' GPUs hold neither.
      if (p > 0) k->shard.weights.tok_embeddings = TensorView{};
      if (p < pp_ - 1) k->shard.weights.output = TensorView{};
      k->model = std::make_unique<cuda::CudaModel>(k->shard.config, k->shard.weights, tuning, k->device);
      if (tp_ > 1) {
        k->tp_comm = std::make_unique<TimedDeviceCommunicator>(*tp_comms_[size_t(r)]);
        k->model->set_tensor_parallel(k->tp_comm.get());
      }
      if (pp_ > 1) {
        k->world_comm = std::make_unique<TimedDeviceCommunicator>(*world_comms_[size_t(r)]);
        k->model->set_pipeline_stage(k->world_comm.get(), p > 0 ? r - tp_ : -1, p < pp_ - 1 ? r + tp_ : -1);
      }
      k->last.tp_rank = t;
      k->last.pp_stage = p;
      ranks_.push_back(std::move(k));
    }
  workers_ = std::make_unique<ThreadPool>(world);
}

CudaParallelRunner::~CudaParallelRunner() {
  ranks_.clear();   // the models before the communicators they use
}

std::string CudaParallelRunner::describe() const {
  std::string how = "host-staged (threads)";
#if LLMWB_HAVE_NCCL
  if (dist_ == "nccl") how = "nccl " + nccl_version();
#endif
  return "tp " + std::to_string(tp_) + " x pp " + std::to_string(pp_) + " ranks (" + how + "), rank 0 " +
         ranks_[0]->model->describe();
}

uint64_t CudaParallelRunner::kv_memory_available() const {
  // A rank's pool holds its stage's layers x its KV heads of each block: per device, the free
  // memory over the share of the whole model's block its ranks hold together.
  std::map<int, uint64_t> share;   // device -> sum of layers x kv heads of its ranks
  std::map<int, uint64_t> free_b;
  for (const auto& k : ranks_) {
    share[k->device] += uint64_t(k->shard.config.n_layers) * uint64_t(k->shard.config.n_kv_heads);
    if (!free_b.count(k->device)) free_b[k->device] = k->model->free_memory_bytes();
  }
  const uint64_t whole = uint64_t(n_layers_) * uint64_t(n_kv_heads_);
  uint64_t best = UINT64_MAX;
  for (const auto& [d, s] : share) best = std::min(best, uint64_t(double(free_b[d]) * double(whole) / double(s)));
  return best;
}

void CudaParallelRunner::allocate_kv(int num_blocks, int block_size, KVDType dtype) {
  for (auto& k : ranks_) k->model->allocate_kv(num_blocks, block_size, dtype);
}

void CudaParallelRunner::copy_blocks(std::span<const BlockCopy> copies) {
  if (copies.empty()) return;
  std::vector<std::pair<int, int>> pairs;
  for (const BlockCopy& c : copies) pairs.emplace_back(c.src, c.dst);
  for (auto& k : ranks_) k->model->copy_blocks(pairs);
}

void CudaParallelRunner::abort_all(const std::string& why) {
  for (auto* v : {&world_comms_, &tp_comms_})
    for (auto& c : *v) c->abort(why);
}

void CudaParallelRunner::execute(const ForwardBatch& batch, float* logits, int record_layer, AttentionRecord* record,
                                 DeviceSampled*) {
  if (batch.exit_layers > 0 && pp_ > 1)
    throw Error("pipeline_parallel_size", "speculative decoding's early-exit draft (layers:K) runs with "
                                          "pipeline_parallel_size 1");
  std::vector<std::exception_ptr> errors(ranks_.size());
  const auto origin = std::chrono::steady_clock::now();   // every rank's spans count from here
  auto since_origin = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - origin).count(); };
  workers_->run([&](int ith, int) {
    CudaRank& k = *ranks_[size_t(ith)];
    try {
      const auto t0 = std::chrono::steady_clock::now();
      LLMWB_CUDA(cudaSetDevice(k.device));
      if (!k.start) k.start = std::make_unique<cuda::Event>();
      const double start_at = since_origin();
      k.start->record(k.model->stream());
      const bool last = k.p == pp_ - 1;
      float* out = nullptr;
      if (last) {
        k.logits.resize(std::max<size_t>(1, size_t(batch.num_logit_rows) * size_t(k.shard.config.vocab_size)));
        out = k.logits.data();
      }
      // The attention heatmap: only a rank that holds all of the recorded layer's heads records it.
      const int local = record_layer - k.first_layer;
      const bool mine = record && tp_ == 1 && local >= 0 && local < k.shard.config.n_layers;
      k.model->forward(batch, out, mine ? local : -1, mine ? record : nullptr, nullptr);
      RankTelemetry& m = k.last;
      m.step_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double end_at = since_origin();
      using K = TimedDeviceCommunicator::Kind;
      m.allreduce_seconds = 0, m.allreduce_bytes = 0, m.recv_seconds = 0, m.sendrecv_bytes = 0;
      std::vector<RankSpan> comm;
      if (k.tp_comm) {
        const auto s = k.tp_comm->read_step(*k.start, start_at, comm);
        m.allreduce_seconds = s.seconds[int(K::AllReduce)];
        m.allreduce_bytes = s.bytes[int(K::AllReduce)];
      }
      if (k.world_comm) {
        const auto s = k.world_comm->read_step(*k.start, start_at, comm);
        m.recv_seconds = s.seconds[int(K::Recv)];
        m.sendrecv_bytes = s.bytes[int(K::Recv)] + s.bytes[int(K::Send)];
      }
      m.compute_seconds = std::max(0.0, m.step_seconds - m.allreduce_seconds - m.recv_seconds);
      // The lanes of the Parallelism view: the communication spans in time order, compute between
      // them, up to the end of the rank's step (its logits copied back).
      std::sort(comm.begin(), comm.end(), [](const RankSpan& a, const RankSpan& b) { return a.begin < b.begin; });
      m.spans.clear();
      float at = float(start_at);
      for (const RankSpan& c : comm) {
        if (c.begin > at) m.spans.push_back(RankSpan{RankSpan::Kind::Compute, at, c.begin, 0, 0});
        m.spans.push_back(c);
        at = std::max(at, c.end);
      }
      if (float(end_at) > at) m.spans.push_back(RankSpan{RankSpan::Kind::Compute, at, float(end_at), 0, 0});
    } catch (...) {
      errors[size_t(ith)] = std::current_exception();
      const std::string why = current_exception_text("a rank failed");
      abort_all("rank " + std::to_string(ith) + ": " + why);
    }
  });
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  // The logits rows: rank t of the last stage holds columns [vocab_begin, + its vocab size).
  if (!logits) return;
  for (int t = 0; t < tp_; ++t) {
    const CudaRank& k = *ranks_[size_t((pp_ - 1) * tp_ + t)];
    const int64_t vl = k.shard.config.vocab_size;
    for (int i = 0; i < batch.num_logit_rows; ++i)
      std::copy(k.logits.data() + int64_t(i) * vl, k.logits.data() + int64_t(i + 1) * vl,
                logits + int64_t(i) * vocab_size_ + k.shard.vocab_begin);
  }
}

std::vector<RankTelemetry> CudaParallelRunner::rank_telemetry() const {
  std::vector<RankTelemetry> out;
  for (const auto& k : ranks_) out.push_back(k->last);
  return out;
}

}  // namespace

std::unique_ptr<ModelRunner> make_cuda_parallel_runner(int tensor_parallel_size, int pipeline_parallel_size,
                                                       const std::string& dist, const TuningConfig& tuning,
                                                       ModelFile& file, const LlamaWeights& weights,
                                                       const RunnerProgress& progress) {
  return std::make_unique<CudaParallelRunner>(tensor_parallel_size, pipeline_parallel_size, dist, tuning, file, weights,
                                              progress);
}

#else

std::unique_ptr<ModelRunner> make_cuda_parallel_runner(int, int, const std::string&, const TuningConfig&, ModelFile&,
                                                       const LlamaWeights&, const RunnerProgress&) {
  throw Error("backend", "'cuda' is not available: " + cuda_unavailable_reason());
}

#endif

}  // namespace llmwb
