// elementwise.cu — the small per-token kernels of the forward pass: embedding gather, RMSNorm
// (alone and fused with the residual add), RoPE, SwiGLU, residual and bias adds, row gather, and the
// K/V pool writes (f32 copied, f16 rounded, int8 quantized per token and kv head) and block
// copies. All memory-bound; each is one pass over its data.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "dequant.cuh"
#include "launch.cuh"
#include "llmwb_kernels.h"

namespace llmwb::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n, int per_block = kThreads) {
  const int64_t b = (n + per_block - 1) / per_block;
  return static_cast<unsigned>(b < 65535 * 16 ? (b > 0 ? b : 1) : 65535 * 16);
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the total.
__device__ float block_sum(float v) {
  __shared__ float part[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();   // `part` may still be read by a previous call
  if (lane == 0) part[warp] = v;
  __syncthreads();
  const int nw = blockDim.x / 32;
  v = lane < nw ? part[lane] : 0.0f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__global__ void embed_kernel(DeviceMatrix table, const int* tokens, int n_rows, float* out) {
  const int r = blockIdx.y;
  const uint8_t* row = static_cast<const uint8_t*>(table.data) + int64_t(tokens[r]) * table.row_bytes;
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < table.cols; c += int64_t(gridDim.x) * blockDim.x)
    out[int64_t(r) * table.cols + c] = detail::load_elem(table.type, row, c, table.cols);
}

// One block per row. With `delta`, x += delta first (written back) and the norm is of the sum.
__global__ void rmsnorm_kernel(float* x, const float* delta, const float* w, int dim, float eps, float* out) {
  float* xr = x + int64_t(blockIdx.x) * dim;
  const float* dr = delta ? delta + int64_t(blockIdx.x) * dim : nullptr;
  float ss = 0.0f;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) {
    float v = xr[i];
    if (dr) {
      v += dr[i];
      xr[i] = v;
    }
    ss += v * v;
  }
  const float inv = rsqrtf(block_sum(ss) / static_cast<float>(dim) + eps);
  float* o = out + int64_t(blockIdx.x) * dim;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) o[i] = xr[i] * inv * w[i];
}

// One thread per (row, head, pair), q heads first then k heads. The angle is computed in double
// from the double inverse frequency, as the CPU backend does, so positions in the hundreds of
// thousands keep their precision.
__global__ void rope_kernel(float* q, float* k, int n_rows, int n_heads, int n_kv_heads, int head_dim,
                            const int* positions, const double* inv_freq, bool interleaved) {
  const int half = head_dim / 2;
  const int heads = n_heads + n_kv_heads;
  const int64_t total = int64_t(n_rows) * heads * half;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int i = static_cast<int>(t % half);
    const int h = static_cast<int>((t / half) % heads);
    const int r = static_cast<int>(t / (int64_t(half) * heads));
    float* v = h < n_heads ? q + (int64_t(r) * n_heads + h) * head_dim
                           : k + (int64_t(r) * n_kv_heads + (h - n_heads)) * head_dim;
    double sd, cd;
    sincos(static_cast<double>(positions[r]) * inv_freq[i], &sd, &cd);
    const float sn = static_cast<float>(sd), cs = static_cast<float>(cd);
    const int a = interleaved ? 2 * i : i, b = interleaved ? 2 * i + 1 : i + half;
    const float x0 = v[a], x1 = v[b];
    v[a] = x0 * cs - x1 * sn;
    v[b] = x0 * sn + x1 * cs;
  }
}

__global__ void silu_mul_kernel(float* gate, const float* up, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float g = gate[i];
    gate[i] = g / (1.0f + expf(-g)) * up[i];
  }
}

__global__ void add_kernel(float* y, const float* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] += x[i];
}

__global__ void add_bias_kernel(float* y, const float* b, int64_t n, int width) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] += b[i % width];
}

__global__ void gather_rows_kernel(const float* src, const int* rows, int width, float* dst) {
  const float* s = src + int64_t(rows[blockIdx.y]) * width;
  float* d = dst + int64_t(blockIdx.y) * width;
  for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < width; c += gridDim.x * blockDim.x) d[c] = s[c];
}

__global__ void store_kv_kernel(float* k_pool, float* v_pool, const float* k, const float* v, const int64_t* slots,
                                int kv_dim) {
  const int r = blockIdx.y;
  const int64_t slot = slots[r];
  if (slot < 0) return;
  float* kd = k_pool + slot * kv_dim;
  float* vd = v_pool + slot * kv_dim;
  for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < kv_dim; c += gridDim.x * blockDim.x) {
    kd[c] = k[int64_t(r) * kv_dim + c];
    vd[c] = v[int64_t(r) * kv_dim + c];
  }
}

// The f16 pool's element for x, bit for bit engine/kv's kv_half: saturated to +-65504 with the
// same comparisons (NaN passes through them), then rounded to nearest even. A NaN gets the CPU's
// fp32_to_fp16 bits (sign, quiet bit, top payload bits) rather than the hardware's canonical NaN.
__device__ __forceinline__ unsigned short kv_half_bits(float x) {
  constexpr float kMax = 65504.0f;   // the largest finite half
  const float c = x > kMax ? kMax : x < -kMax ? -kMax : x;
  if (c != c) {
    const unsigned u = __float_as_uint(c);
    return static_cast<unsigned short>(((u >> 16) & 0x8000u) | 0x7E00u | (((u & 0x7FFFFFFFu) >> 13) & 0x3FFu));
  }
  return __half_as_ushort(__float2half_rn(c));
}

__global__ void store_kv_f16_kernel(unsigned short* k_pool, unsigned short* v_pool, const float* k, const float* v,
                                    const int64_t* slots, int kv_dim) {
  const int r = blockIdx.y;
  const int64_t slot = slots[r];
  if (slot < 0) return;
  unsigned short* kd = k_pool + slot * kv_dim;
  unsigned short* vd = v_pool + slot * kv_dim;
  for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < kv_dim; c += gridDim.x * blockDim.x) {
    kd[c] = kv_half_bits(k[int64_t(r) * kv_dim + c]);
    vd[c] = kv_half_bits(v[int64_t(r) * kv_dim + c]);
  }
}

// One warp per (row, kv head, K or V): scale = |max| / 127 over the head, code = round(x / scale)
// (ties to even, as the CPU's nearbyint), computed as KVCache::store_int8 does: the same IEEE
// division and product, so both backends write the same bytes. grid (heads / 4, rows), 8 warps.
__global__ void store_kv_int8_kernel(int8_t* k_pool, int8_t* v_pool, float* k_scale, float* v_scale, const float* k,
                                     const float* v, const int64_t* slots, int n_kv_heads, int head_dim) {
  const int r = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int h = blockIdx.x * 4 + warp / 2;
  const int64_t slot = slots[r];
  if (slot < 0 || h >= n_kv_heads) return;   // whole warp; no barrier below but the warp's own
  const bool is_v = warp % 2 == 1;
  const int64_t kv_dim = int64_t(n_kv_heads) * head_dim;
  const float* x = (is_v ? v : k) + int64_t(r) * kv_dim + int64_t(h) * head_dim;
  int8_t* q = (is_v ? v_pool : k_pool) + slot * kv_dim + int64_t(h) * head_dim;
  float amax = 0.0f;
  for (int i = lane; i < head_dim; i += 32) amax = fmaxf(amax, fabsf(x[i]));
  for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  const float sc = amax / 127.0f;
  const float inv = sc > 0.0f ? 1.0f / sc : 0.0f;
  if (lane == 0) (is_v ? v_scale : k_scale)[slot * n_kv_heads + h] = sc;
  for (int i = lane; i < head_dim; i += 32)
    q[i] = static_cast<int8_t>(fminf(fmaxf(rintf(x[i] * inv), -127.0f), 127.0f));
}

// grid.y = pair, grid.z = layer; T is the element (float, half bits, int8 codes or float scales).
template <class T>
__global__ void copy_blocks_kernel(T* k_pool, T* v_pool, int64_t layer_stride, int64_t block_elems, const int* pairs) {
  const int64_t src = int64_t(pairs[2 * blockIdx.y]) * block_elems + blockIdx.z * layer_stride;
  const int64_t dst = int64_t(pairs[2 * blockIdx.y + 1]) * block_elems + blockIdx.z * layer_stride;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < block_elems; i += int64_t(gridDim.x) * blockDim.x) {
    k_pool[dst + i] = k_pool[src + i];
    v_pool[dst + i] = v_pool[src + i];
  }
}

unsigned col_blocks(int64_t cols) {
  const int64_t b = (cols + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 64 ? b : 64);
}

}  // namespace

// Kernels with one grid row per token launch in chunks of at most 65535 tokens (grid.y's limit).
constexpr int kMaxGridY = 65535;

cudaError_t embed(const DeviceMatrix& table, const int* tokens, int n_rows, float* out, cudaStream_t s) {
  for (int r0 = 0; r0 < n_rows; r0 += kMaxGridY) {
    const int n = n_rows - r0 < kMaxGridY ? n_rows - r0 : kMaxGridY;
    LLMWB_LAUNCH(dim3(col_blocks(table.cols), static_cast<unsigned>(n)), kThreads, 0, s, embed_kernel)(table, tokens + r0, n,
                                                                                            out + int64_t(r0) * table.cols);
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

cudaError_t rmsnorm(const float* x, const float* w, int n_rows, int dim, float eps, float* out, cudaStream_t s) {
  if (n_rows <= 0) return cudaSuccess;
  LLMWB_LAUNCH(static_cast<unsigned>(n_rows), kThreads, 0, s, rmsnorm_kernel)(const_cast<float*>(x), nullptr, w, dim, eps, out);
  return cudaGetLastError();
}

cudaError_t add_rmsnorm(float* x, const float* delta, const float* w, int n_rows, int dim, float eps, float* out,
                        cudaStream_t s) {
  if (n_rows <= 0) return cudaSuccess;
  LLMWB_LAUNCH(static_cast<unsigned>(n_rows), kThreads, 0, s, rmsnorm_kernel)(x, delta, w, dim, eps, out);
  return cudaGetLastError();
}

cudaError_t rope(float* q, float* k, int n_rows, int n_heads, int n_kv_heads, int head_dim, const int* positions,
                 const double* inv_freq, bool interleaved, cudaStream_t s) {
  const int64_t total = int64_t(n_rows) * (n_heads + n_kv_heads) * (head_dim / 2);
  if (total <= 0) return cudaSuccess;
  LLMWB_LAUNCH(blocks_for(total), kThreads, 0, s, rope_kernel)(q, k, n_rows, n_heads, n_kv_heads, head_dim, positions, inv_freq,
                                                     interleaved);
  return cudaGetLastError();
}

cudaError_t silu_mul(float* gate, const float* up, int64_t n, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  LLMWB_LAUNCH(blocks_for(n), kThreads, 0, s, silu_mul_kernel)(gate, up, n);
  return cudaGetLastError();
}

cudaError_t add(float* y, const float* x, int64_t n, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  LLMWB_LAUNCH(blocks_for(n), kThreads, 0, s, add_kernel)(y, x, n);
  return cudaGetLastError();
}

cudaError_t add_bias(float* y, const float* b, int n_rows, int width, cudaStream_t s) {
  const int64_t n = int64_t(n_rows) * width;
  if (n <= 0) return cudaSuccess;
  LLMWB_LAUNCH(blocks_for(n), kThreads, 0, s, add_bias_kernel)(y, b, n, width);
  return cudaGetLastError();
}

cudaError_t gather_rows(const float* src, const int* rows, int n_rows, int width, float* dst, cudaStream_t s) {
  for (int r0 = 0; r0 < n_rows; r0 += kMaxGridY) {
    const int n = n_rows - r0 < kMaxGridY ? n_rows - r0 : kMaxGridY;
    LLMWB_LAUNCH(dim3(col_blocks(width), static_cast<unsigned>(n)), kThreads, 0, s, gather_rows_kernel)(src, rows + r0, width,
                                                                                             dst + int64_t(r0) * width);
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

cudaError_t store_kv(const KVPool& pool, int layer, const float* k, const float* v, const int64_t* slots, int n_rows,
                     cudaStream_t s) {
  const int64_t kv_dim = pool.kv_dim();
  const int64_t elems = pool.elem_offset(layer), scales = pool.scale_offset(layer);
  for (int r0 = 0; r0 < n_rows; r0 += kMaxGridY) {
    const int n = n_rows - r0 < kMaxGridY ? n_rows - r0 : kMaxGridY;
    if (pool.kind == KVDType::INT8) {
      LLMWB_LAUNCH(dim3(static_cast<unsigned>((pool.n_kv_heads + 3) / 4), static_cast<unsigned>(n)), kThreads, 0, s,
                   store_kv_int8_kernel)(static_cast<int8_t*>(pool.k) + elems, static_cast<int8_t*>(pool.v) + elems,
                                         pool.k_scale + scales, pool.v_scale + scales, k + int64_t(r0) * kv_dim,
                                         v + int64_t(r0) * kv_dim, slots + r0, pool.n_kv_heads, pool.head_dim);
    } else if (pool.kind == KVDType::F16) {
      LLMWB_LAUNCH(dim3(col_blocks(kv_dim), static_cast<unsigned>(n)), kThreads, 0, s, store_kv_f16_kernel)(
          static_cast<unsigned short*>(pool.k) + elems, static_cast<unsigned short*>(pool.v) + elems,
          k + int64_t(r0) * kv_dim, v + int64_t(r0) * kv_dim, slots + r0, static_cast<int>(kv_dim));
    } else {
      LLMWB_LAUNCH(dim3(col_blocks(kv_dim), static_cast<unsigned>(n)), kThreads, 0, s, store_kv_kernel)(
          static_cast<float*>(pool.k) + elems, static_cast<float*>(pool.v) + elems, k + int64_t(r0) * kv_dim,
          v + int64_t(r0) * kv_dim, slots + r0, static_cast<int>(kv_dim));
    }
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

namespace {
template <class T>
cudaError_t copy_pool_blocks(T* k, T* v, int n_layers, int64_t layer_stride, int64_t block_elems, const int* pairs,
                             int n_pairs, cudaStream_t s) {
  LLMWB_LAUNCH(dim3(col_blocks(block_elems), static_cast<unsigned>(n_pairs), static_cast<unsigned>(n_layers)), kThreads, 0,
               s, copy_blocks_kernel<T>)(k, v, layer_stride, block_elems, pairs);
  return cudaGetLastError();
}
}  // namespace

cudaError_t copy_blocks(const KVPool& pool, int n_layers, int block_size, const int* pairs, int n_pairs,
                        cudaStream_t s) {
  if (n_pairs <= 0 || n_layers <= 0) return cudaSuccess;
  if (n_pairs > kMaxGridY || n_layers > 65535) return cudaErrorInvalidValue;
  const int64_t block_elems = block_size * pool.kv_dim();
  if (pool.kind == KVDType::F32)
    return copy_pool_blocks(static_cast<float*>(pool.k), static_cast<float*>(pool.v), n_layers, pool.elem_offset(1),
                            block_elems, pairs, n_pairs, s);
  if (pool.kind == KVDType::F16)
    return copy_pool_blocks(static_cast<unsigned short*>(pool.k), static_cast<unsigned short*>(pool.v), n_layers,
                            pool.elem_offset(1), block_elems, pairs, n_pairs, s);
  const cudaError_t e = copy_pool_blocks(static_cast<int8_t*>(pool.k), static_cast<int8_t*>(pool.v), n_layers,
                                         pool.elem_offset(1), block_elems, pairs, n_pairs, s);
  if (e != cudaSuccess) return e;
  return copy_pool_blocks(pool.k_scale, pool.v_scale, n_layers, pool.scale_offset(1),
                          int64_t(block_size) * pool.n_kv_heads, pairs, n_pairs, s);
}

}  // namespace llmwb::cuda
