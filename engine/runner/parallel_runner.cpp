#include "runner/parallel_runner.h"

#include <algorithm>
#include <exception>
#include <thread>

#include "backend/cpu/matmul.h"
#include "llmwb/errors.h"
#include "llmwb/tuning_config.h"
#include "runner/exception_text.h"
#include "runner/host_memory.h"

namespace llmwb {

ParallelRunner::ParallelRunner(int tensor_parallel_size, int pipeline_parallel_size, int threads,
                               const TuningConfig& tuning, ModelFile& file, const LlamaWeights& weights,
                               const RunnerProgress& progress, int micro_batches)
    : tp_(tensor_parallel_size), pp_(pipeline_parallel_size), vocab_size_(file.config.vocab_size),
      micro_batches_(micro_batches) {
  const ModelConfig& c = file.config;
  check_parallel_layout(c, tp_, pp_);
  micro_batch_count(micro_batches_, pp_, 0, true);   // a negative count is an error now, not at the first step
  cpu::apply_process_tuning(tuning);
  const int total = threads > 0 ? threads : int(std::max(1u, std::thread::hardware_concurrency()));
  // A stage's ranks share the threads; overlapping stages share them too (parallel_runner.h).
  const int per_rank = std::max(1, total / tp_);
  overlap_threads_ = std::max(1, total / (tp_ * pp_));
  world_ = std::make_unique<ThreadGroup>(tp_ * pp_);
  for (int p = 0; p < pp_; ++p) tp_groups_.push_back(std::make_unique<ThreadGroup>(tp_));
  for (int p = 0; p < pp_; ++p)
    for (int t = 0; t < tp_; ++t) {
      const int r = p * tp_ + t;
      if (progress && !progress(double(r) / double(tp_ * pp_), "preparing the shard of rank " + std::to_string(r)))
        throw Error(file.path, "loading cancelled");
      ranks_.push_back(std::make_unique<RankWorker>(c, weights, t, tp_, p, pp_, per_rank, tuning,
                                                    tp_groups_[size_t(p)]->communicator(t), world_->communicator(r)));
      ranks_.back()->set_overlap_threads(overlap_threads_);
    }
  workers_ = std::make_unique<ThreadPool>(tp_ * pp_);
}

ParallelRunner::~ParallelRunner() = default;

std::string ParallelRunner::describe() const {
  return "tp " + std::to_string(tp_) + " x pp " + std::to_string(pp_) + " ranks (in-process), each " +
         ranks_[0]->backend_name();
}

uint64_t ParallelRunner::kv_memory_available() const { return host_available_memory_bytes(); }

void ParallelRunner::allocate_kv(int num_blocks, int block_size, KVDType dtype) {
  for (auto& r : ranks_) r->allocate_kv(num_blocks, block_size, dtype);
}

void ParallelRunner::copy_blocks(std::span<const BlockCopy> copies) {
  for (auto& r : ranks_) r->copy_blocks(copies);
}

void ParallelRunner::execute(const ForwardBatch& batch, float* logits, int record_layer, AttentionRecord* record,
                             DeviceSampled*) {
  const int m = micro_batch_count(micro_batches_, pp_, int(batch.tokens.size()), true);
  const std::vector<MicroBatch> micro = m > 1 ? split_micro_batches(batch, m) : std::vector<MicroBatch>{};
  const auto origin = SpanLog::Clock::now();
  std::vector<std::exception_ptr> errors(ranks_.size());
  workers_->run([&](int ith, int) {
    RankWorker& r = *ranks_[size_t(ith)];
    try {
      r.run(batch, micro, record_layer, record, origin);
    } catch (...) {
      errors[size_t(ith)] = std::current_exception();
      const std::string why = current_exception_text("a rank failed");
      world_->abort(why);
      tp_groups_[size_t(r.stage())]->abort(why);
    }
  });
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  std::vector<const RankWorker*> last;
  for (int t = 0; t < tp_; ++t) last.push_back(ranks_[size_t((pp_ - 1) * tp_ + t)].get());
  gather_vocab_ranges(last, batch.num_logit_rows, vocab_size_, logits);
  last_.clear();
  std::vector<double> ends;
  for (const auto& r : ranks_) {
    last_.push_back(r->last_step());
    ends.push_back(r->end_seconds());
  }
  fill_bubbles(last_, ends);
  for (size_t i = 0; i < ranks_.size(); ++i) ranks_[i]->count_step(last_[i]);
}

void gather_vocab_ranges(const std::vector<const RankWorker*>& last_stage, int rows, int vocab, float* logits) {
  for (const RankWorker* r : last_stage) {
    const int64_t vl = r->vocab_size();
    const float* src = r->logits().data();
    for (int i = 0; i < rows; ++i)
      std::copy(src + int64_t(i) * vl, src + int64_t(i + 1) * vl, logits + int64_t(i) * vocab + r->vocab_begin());
  }
}

std::vector<RankTelemetry> ParallelRunner::rank_telemetry() const { return last_; }

std::vector<RankTotals> ParallelRunner::rank_stats() const {
  std::vector<RankTotals> out;
  for (const auto& r : ranks_) out.push_back(r->totals());
  return out;
}

}  // namespace llmwb
