// cpu_backend.h — the Backend on the CPU: a thread pool, SIMD matmuls (matmul.h; the integer
// kernels of qmatmul.h, the block types (4-bit, Q8_0, k-quants) over the row-interleaved
// copies this backend caches, qrepack.h), attention over the paged KV cache (attention.h), and plain loops
// (auto-vectorized) for the cheap element-wise operations.
#pragma once

#include <functional>
#include <memory>

#include "backend/backend.h"
#include "backend/cpu/qrepack.h"
#include "backend/cpu/thread_pool.h"

namespace llmwb {

class CpuBackend final : public Backend {
 public:
  // float_panels: TuningConfig::float_panels (the one-argument form takes the environment's).
  explicit CpuBackend(int n_threads);
  CpuBackend(int n_threads, bool float_panels);
  std::string name() const override;
  int num_threads() const override { return pool_.size(); }
  ThreadPool& pool() { return pool_; }

  void embed(const TensorView& table, const int* tokens, int n_rows, float* out) override;
  void rmsnorm(const float* x, const float* w, int n_rows, int dim, float eps, float* out) override;
  // Block-quantized weights (cpu::repackable) run over a row-interleaved copy built on first use
  // (or by prepare); F32 / F16 / BF16 weights over 16-row panels where AVX-512 runs (fpanel.h,
  // also built on first use or by prepare); the rest in place (cpu::matmul).
  void matmul(const TensorView& W, const float* x, int n_rows, float* y) override;
  // Repacked block weights of one width: x quantized once and all their rows in one parallel
  // pass (cpu::qmatmul_packed_multi); anything else as separate matmul calls.
  void matmul_shared_input(const float* x, int n_rows, std::span<const MatmulOut> outs) override;
  // Builds W's packed copy now (if its type has one), so the first request does not pay it.
  void prepare(const TensorView& W);
  const cpu::RepackCache& repacked() const { return repack_; }
  void rope(float* x, int n_rows, int n_heads, const int* positions, const RopeParams& rp) override;
  void store_kv(KVCache& cache, int layer, const ForwardBatch& batch, const float* k, const float* v) override;
  void attention(const KVCache& cache, int layer, const ForwardBatch& batch, const float* q,
                 const AttentionParams& p, float* out, AttentionRecord* record) override;
  void silu_mul(float* gate, const float* up, int64_t n) override;
  void add(float* y, const float* x, int64_t n) override;
  void add_bias(float* y, const float* b, int n_rows, int width) override;

 private:
  bool use_panels(const TensorView& W) const;
  void elementwise(int64_t n, const std::function<void(int64_t, int64_t)>& body);
  ThreadPool pool_;
  bool float_panels_ = true;   // TuningConfig::float_panels
  cpu::RepackCache repack_;   // lives no longer than the model's tensors (see RepackCache)
  // cos / sin of every position seen so far for the model's RoPE frequencies (rows of
  // head_dim / 2 cosines then as many sines, each std::cos / std::sin of the double angle, as
  // the per-call loop computed them): a 512-token prefill of llama-110m spent ~1 % of its time
  // recomputing them for q and k in every layer, on one thread.
  const float* rope_table(const RopeParams& rp, int max_pos);
  std::vector<double> rope_freq_;
  std::vector<float> rope_table_;
  int rope_positions_ = 0;
  // What store_kv and attention derive from a batch, built once per named batch
  // (ForwardBatch::step) and reused by every layer; an unnamed batch (step 0) rebuilds it.
  struct AttentionTile {
    int seq, first, count;   // rows [first, first + count) of batch.seqs[seq]
  };
  const std::vector<int64_t>& slots_for(const ForwardBatch& batch, int block_size);
  const std::vector<AttentionTile>& tiles_for(const ForwardBatch& batch, int tile_tokens, int* max_ctx);
  uint64_t slots_step_ = 0, tiles_step_ = 0;
  int tiles_tokens_ = 0, tiles_max_ctx_ = 0;
  std::vector<int64_t> slots_;
  std::vector<AttentionTile> tiles_;
  std::vector<std::vector<float>> scores_;   // per-thread attention score rows
  std::vector<std::vector<const float*>> kv_rows_;   // per-thread K then V row pointers of a task
  std::vector<std::vector<float>> kv_decoded_;       // per-thread f16 / int8 K then V rows as f32
};

}  // namespace llmwb
