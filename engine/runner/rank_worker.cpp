#include "runner/rank_worker.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "llmwb/errors.h"
#include "llmwb/tuning_config.h"

namespace llmwb {

namespace {
double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

RankWorker::RankWorker(const ModelConfig& c, const LlamaWeights& weights, int tp_rank, int tp_size, int stage,
                       int pp_size, int threads, const TuningConfig& tuning, Communicator& tp_group,
                       Communicator& world)
    : t_(tp_rank), tp_(tp_size), p_(stage), pp_(pp_size), threads_(threads), overlap_threads_(threads),
      tp_comm_(tp_group), world_comm_(world) {
  const auto [l0, l1] = split_range(c.n_layers, pp_, p_, 1, "pipeline_parallel_size", "the layers");
  first_layer_ = int(l0);
  shard_ = make_weight_shard(c, weights, ShardSpec{t_, tp_, int(l0), int(l1 - l0)});
  backend_ = std::make_unique<CpuBackend>(threads, tuning.float_panels);
  for (const LlamaLayerWeights& L : shard_.weights.layers)
    for (const TensorView* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w1, &L.w2, &L.w3}) backend_->prepare(*w);
  if (last_stage()) backend_->prepare(shard_.weights.output);
  model_ = std::make_unique<LlamaModel>(shard_.config, shard_.weights, *backend_);
  if (tp_ > 1) model_->set_tensor_parallel(&tp_comm_);
  tp_comm_.log = world_comm_.log = &log_;
  last_.tp_rank = t_;
  last_.pp_stage = p_;
}

void RankWorker::allocate_kv(int num_blocks, int block_size, KVDType dtype) {
  const ModelConfig& c = shard_.config;
  kv_ = std::make_unique<KVCache>(c.n_layers, num_blocks, block_size, c.n_kv_heads, c.head_dim, dtype);
}

void RankWorker::copy_blocks(std::span<const BlockCopy> copies) {
  for (const BlockCopy& c : copies) kv_->copy_block(c.src, c.dst);
}

void RankWorker::run(const ForwardBatch& batch, const std::vector<MicroBatch>& micro, int record_layer,
                     AttentionRecord* record, SpanLog::Clock::time_point origin) {
  if (!kv_) throw Error("parallel", "allocate_kv must come before a step");
  // An early-exit draft counts layers from the model's first: a later stage cannot tell where
  // its own layers stand in it.
  if (batch.exit_layers > 0 && pp_ > 1)
    throw Error("pipeline_parallel_size", "speculative decoding's early-exit draft (layers:K) runs with "
                                          "pipeline_parallel_size 1");
  const auto t0 = std::chrono::steady_clock::now();
  log_.begin_step(origin);
  const int m = micro.empty() ? 1 : int(micro.size());
  // Stages that overlap share the machine; stages in turn each have all of it.
  backend_->pool().set_width(m > 1 ? overlap_threads_ : threads_);
  const double ar0 = tp_comm_.seconds, recv0 = world_comm_.recv_seconds, send0 = world_comm_.send_seconds;
  const uint64_t arb0 = tp_comm_.bytes, wb0 = world_comm_.bytes;
  const int64_t dim = shard_.config.dim, vl = shard_.config.vocab_size;
  const bool first = p_ == 0, last = last_stage();
  if (last) logits_.resize(size_t(batch.num_logit_rows) * size_t(vl));
  // The attention heatmap: only a rank that holds all of the recorded layer's heads records it
  // (tensor_parallel_size 1: the stage that holds the layer). Micro-batches holding pieces of
  // the captured sequence record their queries' rows, appended in order.
  const int local = record_layer - first_layer_;
  const bool mine = record && tp_ == 1 && local >= 0 && local < shard_.config.n_layers;
  bool recorded = false;
  for (int i = 0; i < m; ++i) {
    const ForwardBatch& b = m == 1 ? batch : micro[size_t(i)].batch;
    log_.set_micro_batch(i);
    const int64_t rows = int64_t(b.tokens.size()) * dim;
    if (!first) {
      act_in_.resize(size_t(rows));
      world_comm_.recv(act_in_.data(), rows, (p_ - 1) * tp_ + t_);
    }
    if (!last) act_out_.resize(size_t(rows));
    log_.begin_compute();
    model_->set_stage_io(first ? nullptr : act_in_.data(), last ? nullptr : act_out_.data());
    float* logits = nullptr;
    if (last && m == 1) {
      logits = logits_.data();
    } else if (last) {
      mb_logits_.resize(size_t(b.num_logit_rows) * size_t(vl));
      logits = mb_logits_.data();
    }
    AttentionRecord piece;
    AttentionRecord* rec = !mine ? nullptr : m == 1 ? record : micro[size_t(i)].captures_attention ? &piece : nullptr;
    model_->forward(b, *kv_, logits, mine ? local : -1, rec);
    if (last && m > 1) {
      const std::vector<int>& to = micro[size_t(i)].logit_rows;
      for (size_t r = 0; r < to.size(); ++r)
        std::copy(mb_logits_.begin() + int64_t(r) * vl, mb_logits_.begin() + int64_t(r + 1) * vl,
                  logits_.begin() + int64_t(to[r]) * vl);
    }
    if (rec == &piece && !piece.rows.empty()) {
      if (!recorded) *record = std::move(piece);
      else record->rows.insert(record->rows.end(), std::make_move_iterator(piece.rows.begin()),
                               std::make_move_iterator(piece.rows.end()));
      recorded = true;
    }
    log_.end_compute();
    if (!last) world_comm_.send(act_out_.data(), rows, (p_ + 1) * tp_ + t_);
  }
  if (mine && !record->rows.empty()) record->layer = record_layer;   // the model's numbering, not the stage's
  RankTelemetry& k = last_;
  k.micro_batches = m;
  k.spans = log_.spans();
  k.step_seconds = since(t0);
  end_seconds_ = log_.seconds(std::chrono::steady_clock::now());
  k.allreduce_seconds = tp_comm_.seconds - ar0;
  k.allreduce_bytes = tp_comm_.bytes - arb0;
  k.recv_seconds = world_comm_.recv_seconds - recv0;
  k.send_seconds = world_comm_.send_seconds - send0;
  k.sendrecv_bytes = world_comm_.bytes - wb0;
  k.compute_seconds = k.step_seconds - k.allreduce_seconds - k.recv_seconds - k.send_seconds;
  k.wall_seconds = k.bubble_seconds = k.bubble_fraction = 0;
}

void fill_bubbles(std::vector<RankTelemetry>& ranks, const std::vector<double>& ends) {
  double wall = 0;
  for (double e : ends) wall = std::max(wall, e);
  for (RankTelemetry& r : ranks) {
    r.wall_seconds = wall;
    r.bubble_seconds = std::max(0.0, wall - r.compute_seconds - r.allreduce_seconds);
    r.bubble_fraction = wall > 0 ? r.bubble_seconds / wall : 0.0;
  }
}

namespace {

// Values written into / read from consecutive 4-byte slots of a float buffer, bit for bit.
struct Packer {
  std::vector<float>& out;
  template <typename T>
  void put(T v) {
    static_assert(sizeof(T) % sizeof(float) == 0);
    const size_t at = out.size();
    out.resize(at + sizeof(T) / sizeof(float));
    std::memcpy(out.data() + at, &v, sizeof(T));
  }
};

struct Unpacker {
  const float* in;
  template <typename T>
  T get() {
    T v;
    std::memcpy(&v, in, sizeof(T));
    in += sizeof(T) / sizeof(float);
    return v;
  }
};

}  // namespace

std::vector<float> pack_telemetry_head(const RankTelemetry& t) {
  std::vector<float> v;
  Packer p{v};
  p.put(int32_t(t.tp_rank));
  p.put(int32_t(t.pp_stage));
  p.put(int32_t(t.micro_batches));
  p.put(int32_t(t.spans.size()));
  for (double d : {t.step_seconds, t.compute_seconds, t.allreduce_seconds, t.recv_seconds, t.send_seconds}) p.put(d);
  p.put(t.allreduce_bytes);
  p.put(t.sendrecv_bytes);
  v.resize(size_t(kTelemetryHeadFloats), 0.0f);
  return v;
}

std::vector<float> pack_telemetry_spans(const RankTelemetry& t) {
  std::vector<float> v;
  v.reserve(t.spans.size() * size_t(kSpanFloats));
  Packer p{v};
  for (const RankSpan& s : t.spans) {
    p.put(int32_t(s.kind));
    p.put(s.begin);
    p.put(s.end);
    p.put(int32_t(s.micro_batch));
    p.put(s.bytes);
  }
  return v;
}

int unpack_telemetry_head(const float* head, RankTelemetry& t) {
  Unpacker u{head};
  t.tp_rank = u.get<int32_t>();
  t.pp_stage = u.get<int32_t>();
  t.micro_batches = u.get<int32_t>();
  const int n = u.get<int32_t>();
  for (double* d : {&t.step_seconds, &t.compute_seconds, &t.allreduce_seconds, &t.recv_seconds, &t.send_seconds})
    *d = u.get<double>();
  t.allreduce_bytes = u.get<uint64_t>();
  t.sendrecv_bytes = u.get<uint64_t>();
  return n;
}

void unpack_telemetry_spans(const float* spans, int n, RankTelemetry& t) {
  Unpacker u{spans};
  t.spans.resize(size_t(n));
  for (RankSpan& s : t.spans) {
    s.kind = RankSpan::Kind(u.get<int32_t>());
    s.begin = u.get<float>();
    s.end = u.get<float>();
    s.micro_batch = u.get<int32_t>();
    s.bytes = u.get<uint64_t>();
  }
}

}  // namespace llmwb
