// llmwb_kernels.h — host-callable launchers of the CUDA kernels (kernels/*.cu).
//
// Plain C++ (no CUDA syntax), so engine/backend/cuda and the gpu tests include it with the
// host compiler. Every launcher enqueues on `stream` and returns cudaGetLastError() of the
// launch; the caller checks it (engine/backend/cuda/cuda_check.h names the kernel in the
// error). All pointers are device pointers unless the comment says otherwise; activations are
// fp32, row-major, n_rows x width.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "llmwb_kernel_types.h"

namespace llmwb::cuda {

// Weight element formats the kernels read directly (engine/format/tensor.h has the layouts).
// Anything else is converted to F16 when uploaded.
enum class WType : int { F32, F16, BF16, Q8_0, Q4_0, Q4_1, INT8_ROW, INT4_G32, INT4_G128 };

struct DeviceMatrix {
  WType type = WType::F32;
  const void* data = nullptr;
  int64_t rows = 0, cols = 0;
  int64_t row_bytes = 0;   // bytes of one row (header and partial tail included)
};

// ---- element-wise (elementwise.cu) -------------------------------------------------------
// out[r] = dequantized table row tokens[r]
cudaError_t embed(const DeviceMatrix& table, const int* tokens, int n_rows, float* out, cudaStream_t s);
// out[r] = x[r] / rms(x[r]) * w; out may be x (the per-head Q/K norm: n_tokens * heads rows of
// head_dim)
cudaError_t rmsnorm(const float* x, const float* w, int n_rows, int dim, float eps, float* out, cudaStream_t s);
// x += delta; out = rmsnorm(x) * w   (the residual add fused with the next block's norm)
cudaError_t add_rmsnorm(float* x, const float* delta, const float* w, int n_rows, int dim, float eps, float* out,
                        cudaStream_t s);
// Rotates every head of q (n_heads) and k (n_kv_heads) by the row's position. inv_freq: head_dim/2
// doubles; interleaved: pairs (2i, 2i+1), else (i, i + head_dim/2).
cudaError_t rope(float* q, float* k, int n_rows, int n_heads, int n_kv_heads, int head_dim, const int* positions,
                 const double* inv_freq, bool interleaved, cudaStream_t s);
// gate = silu(gate) * up
cudaError_t silu_mul(float* gate, const float* up, int64_t n, cudaStream_t s);
// y += x
cudaError_t add(float* y, const float* x, int64_t n, cudaStream_t s);
// y[r] += b for each of n_rows rows of `width` floats (a projection's bias)
cudaError_t add_bias(float* y, const float* b, int n_rows, int width, cudaStream_t s);
// dst[r] = src[rows[r]] (width floats each)
cudaError_t gather_rows(const float* src, const int* rows, int n_rows, int width, float* dst, cudaStream_t s);

// ---- the K/V pool (elementwise.cu writes and copies it; attention.cu reads it) ---------------
// K and V of every layer, layer-major: [layer][block][slot][kv_dim] elements of one KVDType
// (llmwb_kernel_types.h; engine/kv/kv_cache.h's layouts, so a slot holds the same bytes on both
// backends); an INT8 pool's scales lie [layer][block][slot][n_kv_heads] beside the codes.
inline int kv_elem_bytes(KVDType k) { return k == KVDType::F32 ? 4 : k == KVDType::F16 ? 2 : 1; }
struct KVPool {
  void* k = nullptr;
  void* v = nullptr;
  float* k_scale = nullptr;   // I8 only
  float* v_scale = nullptr;
  KVDType kind = KVDType::F32;
  int64_t n_slots = 0;        // num_blocks * block_size (slots of one layer)
  int n_kv_heads = 0, head_dim = 0;
  int64_t kv_dim() const { return int64_t(n_kv_heads) * head_dim; }
  // Where `layer` starts: in elements (floats, halves or codes) and in scales.
  int64_t elem_offset(int layer) const { return int64_t(layer) * n_slots * kv_dim(); }
  int64_t scale_offset(int layer) const { return int64_t(layer) * n_slots * n_kv_heads; }
};
// One layer of a pool, as attention reads it.
struct KVLayer {
  const void* k = nullptr;
  const void* v = nullptr;
  const float* k_scale = nullptr;   // I8 only
  const float* v_scale = nullptr;
  KVDType kind = KVDType::F32;
};
inline KVLayer kv_layer(const KVPool& p, int layer) {
  const int64_t bytes = p.elem_offset(layer) * kv_elem_bytes(p.kind);
  const bool i8 = p.kind == KVDType::INT8;
  return {static_cast<const uint8_t*>(p.k) + bytes, static_cast<const uint8_t*>(p.v) + bytes,
          i8 ? p.k_scale + p.scale_offset(layer) : nullptr, i8 ? p.v_scale + p.scale_offset(layer) : nullptr, p.kind};
}
// An f32 layer of K and V (one layer's [slot][kv_dim] floats).
inline KVLayer kv_f32(const float* k, const float* v) { return {k, v, nullptr, nullptr, KVDType::F32}; }
// Writes row r of k and v (kv_dim floats each) to slot slots[r] of `layer` (slot < 0: skipped):
// rounded to half in an F16 pool, quantized per kv head in an I8 pool.
cudaError_t store_kv(const KVPool& pool, int layer, const float* k, const float* v, const int64_t* slots, int n_rows,
                     cudaStream_t s);
// Copies whole blocks (all layers, K and V, and their scales): pairs[2i] -> pairs[2i+1].
cudaError_t copy_blocks(const KVPool& pool, int n_layers, int block_size, const int* pairs, int n_pairs,
                        cudaStream_t s);

// ---- matrices (gemv.cu, convert.cu) ---------------------------------------------------------
// y[r] = W x[r] for n_rows <= kGemvMaxRows, reading W once (the decode path). Each output is
// summed in an order that depends only on its own row, never on n_rows.
constexpr int kGemvMaxRows = 8;
cudaError_t gemv(const DeviceMatrix& W, const float* x, int n_rows, float* y, cudaStream_t s);
// Up to 3 matrices of one type and width in one launch (Q, K, V): y[i] = W[i] x, each output
// bit-identical to gemv(). Where they cannot share the vectorised kernel (gemv_can_stack false)
// each runs on its own.
bool gemv_can_stack(const DeviceMatrix* const* W, int count, const float* x);
cudaError_t gemv_stacked(const DeviceMatrix* const* W, float* const* y, int count, const float* x, int n_rows,
                         cudaStream_t s);
// out = silu(W1 x) * (W3 x) in one pass over both matrices (the FFN's gate and up), bit-identical
// to two gemv() calls and silu_mul(); needs gemv_can_stack({W1, W3}) and equal shapes, else
// cudaErrorInvalidValue.
cudaError_t gemv_swiglu(const DeviceMatrix& W1, const DeviceMatrix& W3, const float* x, int n_rows, float* out,
                        cudaStream_t s);
// dst (rows x cols, half or bfloat16 per `to_bf16`) = dequantized W: the prefill path feeds it
// to cuBLAS.
cudaError_t dequantize_matrix(const DeviceMatrix& W, void* dst, bool to_bf16, cudaStream_t s);
// dst = (half or bfloat16) src, n elements.
cudaError_t f32_to_half(const float* src, void* dst, int64_t n, bool to_bf16, cudaStream_t s);

// ---- attention (attention.cu) ----------------------------------------------------------------
// One engine step's attention metadata, all device arrays.
struct AttentionBatch {
  int n_rows = 0;               // query tokens
  const int* row_pos = nullptr;  // [n_rows] position of each query token
  const int* row_seq = nullptr;  // [n_rows] its sequence
  const int* seq_table = nullptr;  // [n_seqs] offset of the sequence's block table in `tables`
  const int* tables = nullptr;   // block ids, all sequences back to back
  // Query tiles: consecutive rows of one sequence that share K/V tiles (FlashAttention-style
  // prefill; a decode row is a tile of one). tile_first[t], tile_rows[t].
  int n_tiles = 0;
  const int* tile_first = nullptr;
  const int* tile_rows = nullptr;
  int max_ctx = 0;              // longest context (position + 1) of any row
};
struct AttentionShape {
  int n_heads = 0, n_kv_heads = 0, head_dim = 0, block_size = 0;
  float scale = 1.0f;
};
// The query rows a tile may hold for a given GQA group (heads per kv head).
int attention_tile_rows(int group);
// Floats of workspace attention() needs for this batch (n_splits chosen inside).
int64_t attention_workspace_floats(const AttentionBatch& b, const AttentionShape& sh, int num_sms);
// out (n_rows x n_heads*head_dim) = causal softmax(q k^T * scale) v over each row's positions
// 0..pos, K/V read through the block tables (PagedAttention), split over the context when the
// batch is too small to fill the GPU (flash-decoding), then reduced.
// An F16 layer is converted to float, an I8 layer read as scale * code, in the kernels'
// registers and shared memory (never converted in memory).
cudaError_t attention(const float* q, const KVLayer& kv, const AttentionBatch& b, const AttentionShape& sh,
                      float* workspace, int num_sms, float* out, cudaStream_t s);
// The naive kernel (one thread block per (row, head), scores in shared memory): the benchmark
// baseline and the heatmap: when `weights` is given, row r's softmax weights for head h go to
// weights[((r - first_row) * n_heads + h) * weights_stride + j] for the rows first_row ..
// first_row + n_weight_rows - 1. Needs max_ctx * 4 bytes of shared memory.
cudaError_t attention_naive(const float* q, const KVLayer& kv, const AttentionBatch& b, const AttentionShape& sh,
                            float* out, float* weights, int first_row, int n_weight_rows, int weights_stride,
                            cudaStream_t s);

// ---- sampling (sampling.cu) -------------------------------------------------------------------
// out[r] = argmax of logits row r (vocab floats); ties to the lowest id, as the CPU sampler.
// prob (may be null): prob[r] = that token's probability under softmax(logits[r]) (temperature
// 1), the figure the CPU sampler reports for a greedy token.
cudaError_t argmax_rows(const float* logits, int n_rows, int vocab, int* out, float* prob, cudaStream_t s);
// out[r] = the token the CPU sampler (engine/sample/sampler.cpp, without repetition penalty)
// draws from logits[r] with these parameters and uniform u: softmax at temperature, candidates in
// descending probability (ties to the lower id), top-k, then top-p (of the whole mass), then
// min-p, renormalized; the first candidate whose running probability exceeds u. prob[r] = its
// probability in that distribution.
cudaError_t sample_rows(const float* logits, int n_rows, int vocab, const RowSampling* params, int* out,
                        float* prob, cudaStream_t s);

}  // namespace llmwb::cuda
