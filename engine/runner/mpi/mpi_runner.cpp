#include "runner/mpi/mpi_runner.h"

#include <cstring>
#include <thread>

#include "backend/cpu/matmul.h"
#include "llmwb/errors.h"
#include "llmwb/tuning_config.h"
#include "quant/weight_quantizer.h"
#include "runner/host_memory.h"

namespace llmwb {

namespace {

enum Op : int64_t { kOpen = 1, kAllocateKv, kCopyBlocks, kExecute, kClose, kExit };

// One command: {op, payload bytes} then the payload, broadcast from rank 0.
void send_command(Communicator& world, Op op, std::vector<int64_t> payload = {}) {
  int64_t head[2] = {op, int64_t(payload.size())};
  world.broadcast_bytes(head, sizeof head, 0);
  if (!payload.empty()) world.broadcast_bytes(payload.data(), int64_t(payload.size() * sizeof(int64_t)), 0);
}

Op receive_command(Communicator& world, std::vector<int64_t>& payload) {
  int64_t head[2] = {0, 0};
  world.broadcast_bytes(head, sizeof head, 0);
  payload.assign(size_t(head[1]), 0);
  if (head[1] > 0) world.broadcast_bytes(payload.data(), int64_t(payload.size() * sizeof(int64_t)), 0);
  return Op(head[0]);
}

std::vector<int64_t> text_payload(const std::string& s) {
  std::vector<int64_t> v(1 + (s.size() + 7) / 8, 0);
  v[0] = int64_t(s.size());
  std::memcpy(v.data() + 1, s.data(), s.size());
  return v;
}

std::string payload_text(const std::vector<int64_t>& v) {
  return std::string(reinterpret_cast<const char*>(v.data() + 1), size_t(v[0]));
}

// What every rank must agree on: the layout and the model's shape and bytes.
std::string fingerprint(const ModelFile& f, int tp, int pp, const std::string& quantize) {
  const ModelConfig& c = f.config;
  uint64_t bytes = 0;
  for (const TensorView& t : f.tensors) bytes += t.nbytes;
  return "tp " + std::to_string(tp) + " pp " + std::to_string(pp) + "; " + c.architecture + " dim " +
         std::to_string(c.dim) + " hidden " + std::to_string(c.hidden_dim) + " layers " + std::to_string(c.n_layers) +
         " heads " + std::to_string(c.n_heads) + "/" + std::to_string(c.n_kv_heads) + " vocab " +
         std::to_string(c.vocab_size) + ", " + std::to_string(bytes) + " bytes of tensors, quantize '" + quantize + "'";
}

// The step's batch and the micro-batch count rank 0 chose for it (every rank cuts it alike).
std::vector<int64_t> flatten(const ForwardBatch& b, int micro_batches) {
  std::vector<int64_t> v{int64_t(b.step), b.num_logit_rows, b.exit_layers, micro_batches, int64_t(b.tokens.size())};
  v.insert(v.end(), b.tokens.begin(), b.tokens.end());
  v.push_back(int64_t(b.seqs.size()));
  for (const ForwardSeq& s : b.seqs) {
    v.insert(v.end(), {s.first, s.n_tokens, s.start_pos, s.logits_row, s.all_logits, s.decode,
                       int64_t(s.block_table ? s.block_table->size() : 0)});
    if (s.block_table) v.insert(v.end(), s.block_table->begin(), s.block_table->end());
  }
  return v;
}

int unflatten(const std::vector<int64_t>& v, ForwardBatch& b, std::vector<std::vector<int>>& tables) {
  size_t i = 0;
  b.step = uint64_t(v[i++]);
  b.num_logit_rows = int(v[i++]);
  b.exit_layers = int(v[i++]);
  const int micro_batches = int(v[i++]);
  b.tokens.assign(v.begin() + int64_t(i + 1), v.begin() + int64_t(i + 1) + v[i]);
  i += 1 + size_t(v[i]);
  const size_t ns = size_t(v[i++]);
  b.seqs.assign(ns, {});
  tables.assign(ns, {});
  for (size_t k = 0; k < ns; ++k) {
    ForwardSeq& s = b.seqs[k];
    s.first = int(v[i++]);
    s.n_tokens = int(v[i++]);
    s.start_pos = int(v[i++]);
    s.logits_row = int(v[i++]);
    s.all_logits = v[i++] != 0;
    s.decode = v[i++] != 0;
    const size_t nb = size_t(v[i++]);
    tables[k].assign(v.begin() + int64_t(i), v.begin() + int64_t(i + nb));
    i += nb;
    s.block_table = &tables[k];
  }
  return micro_batches;
}

// A worker's telemetry of the step to rank 0: its head, then its spans.
void send_telemetry(Communicator& world, const RankTelemetry& t) {
  const std::vector<float> head = pack_telemetry_head(t), spans = pack_telemetry_spans(t);
  world.send(head.data(), int64_t(head.size()), 0);
  if (!spans.empty()) world.send(spans.data(), int64_t(spans.size()), 0);
}

RankTelemetry receive_telemetry(Communicator& world, int from) {
  RankTelemetry t;
  std::vector<float> buf(static_cast<size_t>(kTelemetryHeadFloats));
  world.recv(buf.data(), kTelemetryHeadFloats, from);
  const int n = unpack_telemetry_head(buf.data(), t);
  if (n > 0) {
    buf.resize(size_t(n) * size_t(kSpanFloats));
    world.recv(buf.data(), int64_t(buf.size()), from);
    unpack_telemetry_spans(buf.data(), n, t);
  }
  return t;
}

int threads_for(int threads, int world) {
  if (threads > 0) return threads;
  return std::max(1, int(std::thread::hardware_concurrency()) / std::max(1, world));
}

std::unique_ptr<MpiCommunicator> split_stage(int tp) {
  const int r = mpi_world_rank();
  MPI_Comm c;
  MPI_Comm_split(MPI_COMM_WORLD, r / tp, r % tp, &c);
  return std::make_unique<MpiCommunicator>(c, true);
}

}  // namespace

// Rank 0, ending: every worker waits in its command loop from its start on.
void mpi_release_workers() {
  if (mpi_world_rank() != 0 || mpi_world_size() == 1) return;
  MpiCommunicator world(MPI_COMM_WORLD);
  int64_t head[2] = {kExit, 0};
  world.broadcast_bytes(head, sizeof head, 0);
}

MpiRunner::MpiRunner(int tp, int pp, int threads, const TuningConfig& tuning, ModelFile& file,
                     const LlamaWeights& weights, const std::string& quantize, int micro_batches)
    : tp_(tp), pp_(pp), vocab_(file.config.vocab_size), micro_batches_(micro_batches) {
  mpi_ensure_initialized();
  check_parallel_layout(file.config, tp, pp);
  micro_batch_count(micro_batches_, pp, 0, false);   // a negative count is an error before any process starts work
  const int world = mpi_world_size();
  if (world != tp * pp)
    throw Error("tensor_parallel_size", "--dist mpi: the job has " + std::to_string(world) +
                                            " processes, but tensor x pipeline parallel size is " + std::to_string(tp) +
                                            " x " + std::to_string(pp) + " (mpirun -np " + std::to_string(tp * pp) + ")");
  cpu::apply_process_tuning(tuning);
  world_ = std::make_unique<MpiCommunicator>(MPI_COMM_WORLD);
  send_command(*world_, kOpen, text_payload(fingerprint(file, tp, pp, quantize)));
  tp_group_ = split_stage(tp);
  worker_ = std::make_unique<RankWorker>(file.config, weights, 0, tp, 0, pp, threads_for(threads, world), tuning,
                                         *tp_group_, *world_);
}

MpiRunner::~MpiRunner() {
  send_command(*world_, kClose);
  world_->barrier();   // every worker has dropped its rank before its communicators go
}

std::string MpiRunner::describe() const {
  return "tp " + std::to_string(tp_) + " x pp " + std::to_string(pp_) + " ranks (mpi), rank 0 " + worker_->backend_name();
}

uint64_t MpiRunner::kv_memory_available() const { return host_available_memory_bytes(); }

void MpiRunner::allocate_kv(int num_blocks, int block_size, KVDType dtype) {
  send_command(*world_, kAllocateKv, {num_blocks, block_size, int64_t(dtype)});
  worker_->allocate_kv(num_blocks, block_size, dtype);
}

void MpiRunner::copy_blocks(std::span<const BlockCopy> copies) {
  std::vector<int64_t> v;
  for (const BlockCopy& c : copies) v.insert(v.end(), {c.src, c.dst});
  send_command(*world_, kCopyBlocks, v);
  worker_->copy_blocks(copies);
}

void MpiRunner::execute(const ForwardBatch& batch, float* logits, int, AttentionRecord*, DeviceSampled*) {
  try {
    const int m = micro_batch_count(micro_batches_, pp_, int(batch.tokens.size()), false);
    const auto origin = SpanLog::Clock::now();
    send_command(*world_, kExecute, flatten(batch, m));
    worker_->run(batch, m > 1 ? split_micro_batches(batch, m) : std::vector<MicroBatch>{}, -1, nullptr, origin);
    const int rows = batch.num_logit_rows;
    for (int t = 0; t < tp_; ++t) {
      const int src = (pp_ - 1) * tp_ + t;
      const auto [v0, v1] = split_range(vocab_, tp_, t, 1, "tensor_parallel_size", "the vocabulary");
      const int64_t vl = v1 - v0;
      const float* from = nullptr;
      if (src == 0) {
        from = worker_->logits().data();
      } else {
        buf_.resize(size_t(rows * vl));
        world_->recv(buf_.data(), rows * vl, src);
        from = buf_.data();
      }
      for (int i = 0; i < rows; ++i) std::copy(from + i * vl, from + (i + 1) * vl, logits + int64_t(i) * vocab_ + v0);
    }
    // Every rank's telemetry, each timed from its own start of the step (the command's
    // arrival: the broadcast aligns them to within its latency); the wall is the longest.
    last_.assign(1, worker_->last_step());
    std::vector<double> ends{worker_->end_seconds()};
    for (int r = 1; r < tp_ * pp_; ++r) {
      last_.push_back(receive_telemetry(*world_, r));
      ends.push_back(last_.back().step_seconds);
    }
    fill_bubbles(last_, ends);
    worker_->count_step(last_[0]);
  } catch (const std::exception& e) {
    world_->abort(e.what());
  }
}

int run_mpi_worker(const EngineConfig& cfg) {
  mpi_ensure_initialized();
  MpiCommunicator world(MPI_COMM_WORLD);
  const int rank = world.rank();
  std::unique_ptr<ModelFile> file;
  std::unique_ptr<MpiCommunicator> tp_group;
  std::unique_ptr<RankWorker> worker;
  std::vector<int64_t> payload;
  ForwardBatch batch;
  std::vector<std::vector<int>> tables;
  try {
    for (;;) {
      switch (receive_command(world, payload)) {
        case kOpen: {
          const std::string want = payload_text(payload);
          int tp = 0, pp = 0;
          std::sscanf(want.c_str(), "tp %d pp %d", &tp, &pp);
          file = load_model_file(cfg.model);
          file->config.validate(file->path);
          LlamaWeights weights = LlamaWeights::bind(*file);
          if (!cfg.quantize.empty()) quantize_weights_in_place(*file, weights, cfg.quantize, "cpu");
          const std::string mine = fingerprint(*file, tp, pp, cfg.quantize);
          if (mine != want)
            throw Error(cfg.model, "this rank's model differs from rank 0's: rank 0 has " + want + "; rank " +
                                       std::to_string(rank) + " has " + mine);
          cpu::apply_process_tuning(cfg.tuning);
          tp_group = split_stage(tp);
          worker = std::make_unique<RankWorker>(file->config, weights, rank % tp, tp, rank / tp, pp,
                                                threads_for(cfg.threads, tp * pp), cfg.tuning, *tp_group, world);
          break;
        }
        case kAllocateKv:
          worker->allocate_kv(int(payload[0]), int(payload[1]), KVDType(payload[2]));
          break;
        case kCopyBlocks: {
          std::vector<BlockCopy> copies;
          for (size_t i = 0; i + 1 < payload.size(); i += 2) copies.push_back({int(payload[i]), int(payload[i + 1])});
          worker->copy_blocks(copies);
          break;
        }
        case kExecute: {
          const auto origin = SpanLog::Clock::now();
          const int m = unflatten(payload, batch, tables);
          worker->run(batch, m > 1 ? split_micro_batches(batch, m) : std::vector<MicroBatch>{}, -1, nullptr, origin);
          if (worker->last_stage())
            world.send(worker->logits().data(), int64_t(batch.num_logit_rows) * worker->vocab_size(), 0);
          send_telemetry(world, worker->last_step());
          break;
        }
        case kClose:
          worker.reset();
          tp_group.reset();
          file.reset();
          world.barrier();
          break;
        case kExit:
          MPI_Finalize();
          return 0;
        default:
          throw Error("mpi", "unknown command from rank 0");
      }
    }
  } catch (const std::exception& e) {
    world.abort(e.what());
  }
  return 1;
}

}  // namespace llmwb
