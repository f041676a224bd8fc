// backend.h — the operations a transformer forward pass needs, implemented per device.
//
// The forward pass (model/llama_model.cpp) is written once, top to bottom, against this
// interface; CpuBackend implements it with a thread pool and SIMD kernels. Each operation
// works on row-major activations: n_rows tokens x width floats.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kv/kv_cache.h"
#include "request/forward_batch.h"
#include "format/model_config.h"
#include "format/rope_params.h"
#include "format/tensor.h"

namespace llmwb {

struct AttentionParams {
  int n_heads = 0, n_kv_heads = 0, head_dim = 0;
  float scale = 1.0f;             // 1 / sqrt(head_dim)
};

// One weight and its output in Backend::matmul_shared_input.
struct MatmulOut {
  const TensorView* W = nullptr;
  float* y = nullptr;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual int num_threads() const = 0;

  // out[r] = table.row(tokens[r]) as f32
  virtual void embed(const TensorView& table, const int* tokens, int n_rows, float* out) = 0;
  // out[r] = x[r] / rms(x[r]) * w   (Zhang & Sennrich, RMSNorm, 2019); out may be x (Qwen3's
  // per-head Q/K norm runs it in place over n_tokens * n_heads rows of head_dim).
  virtual void rmsnorm(const float* x, const float* w, int n_rows, int dim, float eps, float* out) = 0;
  // y[r] = W x[r]
  virtual void matmul(const TensorView& W, const float* x, int n_rows, float* y) = 0;
  // o.y[r] = o.W x[r] for every o of outs: several weights applied to one input (Q/K/V, gate/up).
  // Bitwise the same as separate matmul calls; a backend may share the work on x between them.
  virtual void matmul_shared_input(const float* x, int n_rows, std::span<const MatmulOut> outs) {
    for (const MatmulOut& o : outs) matmul(*o.W, x, n_rows, o.y);
  }
  // Rotates each head of x (n_rows x n_heads*head_dim) by the row's position.
  virtual void rope(float* x, int n_rows, int n_heads, const int* positions, const RopeParams& rp) = 0;
  // Writes the batch's new K and V rows (n_rows x kv_dim) into their cache slots.
  virtual void store_kv(KVCache& cache, int layer, const ForwardBatch& batch, const float* k, const float* v) = 0;
  // Causal attention of every new token over its sequence's cached K/V (read through the block
  // table: PagedAttention). q and out are n_rows x n_heads*head_dim. When `record` is set, the
  // softmax weights of the sequence marked capture_attention are stored there.
  virtual void attention(const KVCache& cache, int layer, const ForwardBatch& batch, const float* q,
                         const AttentionParams& p, float* out, AttentionRecord* record) = 0;
  // gate = silu(gate) * up   (SwiGLU, Shazeer 2020)
  virtual void silu_mul(float* gate, const float* up, int64_t n) = 0;
  // y += x
  virtual void add(float* y, const float* x, int64_t n) = 0;
  // y[r] += b for each of the n_rows rows (width floats): a projection's bias (Qwen2's Q/K/V).
  virtual void add_bias(float* y, const float* b, int n_rows, int width) = 0;
};

}  // namespace llmwb
