// attention.cu — causal attention over the paged K/V pool.
//
// The main kernel serves decode and prefill alike. A thread block takes one *query tile*
// (consecutive new tokens of one sequence: a single token in decode, up to attention_tile_rows
// in prefill), one kv head and one *split* of the context. It walks its context range in tiles
// of 32 positions, gathering each K and V tile through the block table into shared memory once
// for every (query, head) pair of the tile and of the GQA group (FlashAttention, Dao et al.
// 2022: Q, K and V tiles in shared memory, online softmax, the score matrix never stored).
// Each warp owns up to four (query, head) pairs: lane j scores position j of the tile, and
// lane l accumulates output dims l, l+32, ... When the batch alone cannot fill the GPU (decode
// of few sequences) the context is split over several blocks whose partial (max, sum, output)
// a second kernel combines (flash-decoding, Dao et al. 2023).
//
// K and V are f32, f16, or int8 codes with a scale per (slot, kv head) (KVPool, a template
// parameter of every kernel): an f16 element is converted to float, an int8 one read as
// scale * code, into registers or shared memory, so an f16 pool moves half the bytes, an int8
// pool a quarter, and nothing is converted in memory. An f16 pool's arithmetic after the
// conversion is the f32 pool's, operation for operation: attention over an f16 pool gives the
// bits of attention over an f32 pool holding the same (half-representable) values.
//
// Head sizes that are not a multiple of 32 (or above 256), and groups above 16 heads, take the
// naive kernel, which also records the softmax weights for the attention heatmap.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <type_traits>

#include "dequant.cuh"
#include "launch.cuh"
#include "llmwb_kernels.h"

namespace llmwb::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kPairsPerWarp = 4;
constexpr int kMaxPairs = kWarps * kPairsPerWarp;
constexpr int kTile = 32;   // positions per K/V tile (one per lane)

struct Split {
  int n = 1;      // splits
  int len = 0;    // positions per split (a multiple of kTile)
};

int tile_rows_for(int group) { return group >= kMaxPairs ? 1 : kMaxPairs / group; }

bool tiled_ok(const AttentionShape& sh) {
  const int group = sh.n_kv_heads > 0 ? sh.n_heads / sh.n_kv_heads : 0;
  return sh.head_dim % 32 == 0 && sh.head_dim <= 256 && group >= 1 && group <= kMaxPairs &&
         sh.n_heads % sh.n_kv_heads == 0;
}

Split choose_split(const AttentionBatch& b, const AttentionShape& sh, int num_sms) {
  Split s;
  const int64_t blocks = int64_t(b.n_tiles) * sh.n_kv_heads;
  const int64_t want = (2 * int64_t(num_sms > 0 ? num_sms : 1) + blocks - 1) / (blocks > 0 ? blocks : 1);
  const int max_splits = (b.max_ctx + 127) / 128;   // keep at least 128 positions per split
  s.n = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(want, max_splits)));
  s.len = ((b.max_ctx + s.n - 1) / s.n + kTile - 1) / kTile * kTile;
  if (s.len < kTile) s.len = kTile;
  s.n = (b.max_ctx + s.len - 1) / s.len;
  if (s.n < 1) s.n = 1;
  return s;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Element d of kv head kvh in `slot` of one layer's K or V (base, scale: KVLayer's), as a float.
template <KVDType K>
__device__ __forceinline__ float kv_elem(const void* base, const float* scale, int64_t slot, int64_t kv_dim,
                                         int n_kv_heads, int kvh, int hd, int d) {
  const int64_t i = slot * kv_dim + int64_t(kvh) * hd + d;
  if constexpr (K == KVDType::INT8)
    return scale[slot * n_kv_heads + kvh] * static_cast<float>(static_cast<const int8_t*>(base)[i]);
  else if constexpr (K == KVDType::F16)
    return __half2float(static_cast<const __half*>(base)[i]);
  else
    return static_cast<const float*>(base)[i];
}


// NC = head_dim / 32: output dims per lane.
template <int NC, KVDType K>
__global__ void __launch_bounds__(kWarps * 32) attention_tiled_kernel(const float* __restrict__ q, KVLayer kv,
                                                                      AttentionBatch b, AttentionShape sh,
                                                                      int split_len, int n_splits,
                                                                      float* __restrict__ ws) {
  constexpr int HD = NC * 32;
  LLMWB_DYNAMIC_SHARED(float, smem);
  float* qs = smem;                          // [kMaxPairs][HD], pre-scaled
  float* ks = qs + kMaxPairs * HD;           // [kTile][HD + 1] (+1: lanes read rows without bank conflicts)
  float* vs = ks + kTile * (HD + 1);         // [kTile][HD + 1]

  const int tile = blockIdx.x, kvh = blockIdx.y, split = blockIdx.z;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int group = sh.n_heads / sh.n_kv_heads;
  const int first = b.tile_first[tile], rows = b.tile_rows[tile];
  const int n_pairs = rows * group;
  const int* table = b.tables + b.seq_table[b.row_seq[first]];
  const int q_dim = sh.n_heads * HD, kv_dim = sh.n_kv_heads * HD;
  const int ctx_end = b.row_pos[first + rows - 1] + 1;   // rows are consecutive positions
  const int begin = split * split_len;
  const int end = min(begin + split_len, ctx_end);

  for (int i = threadIdx.x; i < n_pairs * HD; i += blockDim.x) {
    const int p = i / HD, d = i % HD;
    const int row = first + p / group, head = kvh * group + p % group;
    qs[i] = q[int64_t(row) * q_dim + int64_t(head) * HD + d] * sh.scale;
  }

  float m[kPairsPerWarp], l[kPairsPerWarp], acc[kPairsPerWarp][NC];
  int pos[kPairsPerWarp];
#pragma unroll
  for (int i = 0; i < kPairsPerWarp; ++i) {
    m[i] = -INFINITY;
    l[i] = 0.0f;
    const int p = warp + kWarps * i;
    pos[i] = p < n_pairs ? b.row_pos[first + p / group] : -1;
#pragma unroll
    for (int c = 0; c < NC; ++c) acc[i][c] = 0.0f;
  }

  for (int j0 = begin; j0 < end; j0 += kTile) {
    __syncthreads();   // the previous tile is consumed (and qs written, the first time)
    for (int i = threadIdx.x; i < kTile * HD; i += blockDim.x) {
      const int j = i / HD, d = i % HD;
      float kk = 0.0f, vv = 0.0f;
      if (j0 + j < end) {
        const int pj = j0 + j;
        const int64_t slot = int64_t(table[pj / sh.block_size]) * sh.block_size + pj % sh.block_size;
        kk = kv_elem<K>(kv.k, kv.k_scale, slot, kv_dim, sh.n_kv_heads, kvh, HD, d);
        vv = kv_elem<K>(kv.v, kv.v_scale, slot, kv_dim, sh.n_kv_heads, kvh, HD, d);
      }
      ks[j * (HD + 1) + d] = kk;
      vs[j * (HD + 1) + d] = vv;
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kPairsPerWarp; ++i) {
      const int p = warp + kWarps * i;
      if (p >= n_pairs) break;   // uniform across the warp
      const float* qp = qs + p * HD;
      float sc = 0.0f;
#pragma unroll 8
      for (int d = 0; d < HD; ++d) sc += qp[d] * ks[lane * (HD + 1) + d];
      const int pj = j0 + lane;
      if (pj >= end || pj > pos[i]) sc = -INFINITY;
      const float m_new = fmaxf(m[i], warp_max(sc));
      if (m_new == -INFINITY) continue;   // every position of this tile is in this query's future
      const float corr = __expf(m[i] - m_new);   // m = -inf: 0
      const float pr = sc == -INFINITY ? 0.0f : __expf(sc - m_new);
      l[i] = l[i] * corr + warp_sum(pr);
      m[i] = m_new;
#pragma unroll
      for (int c = 0; c < NC; ++c) acc[i][c] *= corr;
      for (int jj = 0; jj < kTile; ++jj) {
        const float w = __shfl_sync(0xffffffffu, pr, jj);
#pragma unroll
        for (int c = 0; c < NC; ++c) acc[i][c] += w * vs[jj * (HD + 1) + lane + 32 * c];
      }
    }
  }

  // Partials: ws[((row * n_heads + head) * n_splits + split) * (HD + 2)] = m, l, acc[HD].
#pragma unroll
  for (int i = 0; i < kPairsPerWarp; ++i) {
    const int p = warp + kWarps * i;
    if (p >= n_pairs) break;
    const int row = first + p / group, head = kvh * group + p % group;
    float* o = ws + ((int64_t(row) * sh.n_heads + head) * n_splits + split) * (HD + 2);
    if (lane == 0) o[0] = m[i], o[1] = l[i];
#pragma unroll
    for (int c = 0; c < NC; ++c) o[2 + lane + 32 * c] = acc[i][c];
  }
}

// Decode with small GQA groups (MHA: every K/V element serves one (query, head) pair, so a
// shared-memory tile buys nothing): one warp per (row, head, split), no shared K/V. Lane j
// scores position j of each 32-position step reading its K row with 16-byte loads (4 floats,
// 8 halves; int8: 4-byte loads of 4 codes); lane l
// accumulates output dims l, l+32, ... reading V rows coalesced. Same partials as the tiled
// kernel, combined by the same kernel.
template <int NC, KVDType K>
__global__ void __launch_bounds__(kWarps * 32) attention_decode_kernel(const float* __restrict__ q, KVLayer kv,
                                                                       AttentionBatch b, AttentionShape sh,
                                                                       int split_len, int n_splits,
                                                                       float* __restrict__ ws) {
  constexpr int HD = NC * 32;
  __shared__ float qsh[kWarps][HD];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row = blockIdx.x, head = blockIdx.y * kWarps + warp, split = blockIdx.z;
  if (head >= sh.n_heads) return;   // whole warp; no block-wide barrier below
  const int kvh = head / (sh.n_heads / sh.n_kv_heads);
  const int64_t kv_dim = int64_t(sh.n_kv_heads) * HD;
  const int pos = b.row_pos[row];
  const int* table = b.tables + b.seq_table[b.row_seq[row]];
  const int begin = split * split_len;
  const int end = min(begin + split_len, pos + 1);
  float* qw = qsh[warp];
  for (int d = lane; d < HD; d += 32) qw[d] = q[(int64_t(row) * sh.n_heads + head) * HD + d] * sh.scale;
  __syncwarp();
  float m = -INFINITY, l = 0.0f, acc[NC];
#pragma unroll
  for (int c = 0; c < NC; ++c) acc[c] = 0.0f;
  for (int j0 = begin; j0 < end; j0 += kTile) {
    const int j = j0 + lane;
    int64_t slot = 0;
    float sc = -INFINITY;
    if (j < end) {
      slot = int64_t(table[j / sh.block_size]) * sh.block_size + j % sh.block_size;
      float dot = 0.0f;
      if constexpr (K == KVDType::INT8) {   // 4 codes per load; the scale once per position
        const char4* kr = reinterpret_cast<const char4*>(static_cast<const int8_t*>(kv.k) + slot * kv_dim + int64_t(kvh) * HD);
#pragma unroll 8
        for (int d4 = 0; d4 < HD / 4; ++d4) {
          const char4 kk = kr[d4];
          dot += qw[4 * d4] * float(kk.x) + qw[4 * d4 + 1] * float(kk.y) + qw[4 * d4 + 2] * float(kk.z) +
                 qw[4 * d4 + 3] * float(kk.w);
        }
        dot *= kv.k_scale[slot * sh.n_kv_heads + kvh];
      } else if constexpr (K == KVDType::F16) {   // 8 halves per load, summed 4 at a time as the f32 path
        const uint4* kr = reinterpret_cast<const uint4*>(static_cast<const __half*>(kv.k) + slot * kv_dim + int64_t(kvh) * HD);
#pragma unroll 4
        for (int d8 = 0; d8 < HD / 8; ++d8) {
          float kk[8];
          detail::unpack_half8(kr[d8], kk);
          const float* qq = qw + 8 * d8;
          dot += qq[0] * kk[0] + qq[1] * kk[1] + qq[2] * kk[2] + qq[3] * kk[3];
          dot += qq[4] * kk[4] + qq[5] * kk[5] + qq[6] * kk[6] + qq[7] * kk[7];
        }
      } else {
        const float4* kr = reinterpret_cast<const float4*>(static_cast<const float*>(kv.k) + slot * kv_dim + int64_t(kvh) * HD);
#pragma unroll 8
        for (int d4 = 0; d4 < HD / 4; ++d4) {
          const float4 kk = kr[d4];
          dot += qw[4 * d4] * kk.x + qw[4 * d4 + 1] * kk.y + qw[4 * d4 + 2] * kk.z + qw[4 * d4 + 3] * kk.w;
        }
      }
      sc = dot;
    }
    const float m_new = fmaxf(m, warp_max(sc));   // finite: position j0 < end is lane 0's
    const float corr = __expf(m - m_new);
    const float pr = j < end ? __expf(sc - m_new) : 0.0f;
    l = l * corr + warp_sum(pr);
    m = m_new;
#pragma unroll
    for (int c = 0; c < NC; ++c) acc[c] *= corr;
    const int n_valid = min(kTile, end - j0);
    for (int jj = 0; jj < n_valid; ++jj) {
      const float w = __shfl_sync(0xffffffffu, pr, jj);
      const int64_t sj = __shfl_sync(0xffffffffu, slot, jj);
      if constexpr (K == KVDType::INT8) {
        const int8_t* vr = static_cast<const int8_t*>(kv.v) + sj * kv_dim + int64_t(kvh) * HD;
        const float ws = w * kv.v_scale[sj * sh.n_kv_heads + kvh];
#pragma unroll
        for (int c = 0; c < NC; ++c) acc[c] += ws * float(vr[lane + 32 * c]);
      } else if constexpr (K == KVDType::F16) {
        const __half* vr = static_cast<const __half*>(kv.v) + sj * kv_dim + int64_t(kvh) * HD;
#pragma unroll
        for (int c = 0; c < NC; ++c) acc[c] += w * __half2float(vr[lane + 32 * c]);
      } else {
        const float* vr = static_cast<const float*>(kv.v) + sj * kv_dim + int64_t(kvh) * HD;
#pragma unroll
        for (int c = 0; c < NC; ++c) acc[c] += w * vr[lane + 32 * c];
      }
    }
  }
  float* o = ws + ((int64_t(row) * sh.n_heads + head) * n_splits + split) * (HD + 2);
  if (lane == 0) o[0] = m, o[1] = l;
#pragma unroll
  for (int c = 0; c < NC; ++c) o[2 + lane + 32 * c] = acc[c];
}

// One block per (row, head), head_dim threads: out = sum_s e^(m_s - M) acc_s / sum_s e^(m_s - M) l_s.
__global__ void attention_combine_kernel(const float* __restrict__ ws, int n_heads, int head_dim, int n_splits,
                                         float* __restrict__ out) {
  const int row = blockIdx.x, head = blockIdx.y, d = threadIdx.x;
  const float* base = ws + (int64_t(row) * n_heads + head) * n_splits * (head_dim + 2);
  float M = -INFINITY;
  for (int s = 0; s < n_splits; ++s) M = fmaxf(M, base[s * (head_dim + 2)]);
  float L = 0.0f, o = 0.0f;
  for (int s = 0; s < n_splits; ++s) {
    const float* p = base + s * (head_dim + 2);
    if (p[0] == -INFINITY) continue;   // a split past this row's position
    const float w = __expf(p[0] - M);
    L += w * p[1];
    o += w * p[2 + d];
  }
  out[(int64_t(row) * n_heads + head) * head_dim + d] = o / L;
}

// One block per (row, head): scores of every position in shared memory, softmax, weighted sum.
template <KVDType K>
__global__ void attention_naive_kernel(const float* __restrict__ q, KVLayer kv, AttentionBatch b, AttentionShape sh,
                                       float* __restrict__ out, float* __restrict__ weights, int first_row,
                                       int n_weight_rows, int weights_stride) {
  LLMWB_DYNAMIC_SHARED(float, sc);
  __shared__ float red[32];
  const int row = blockIdx.x, head = blockIdx.y;
  const int hd = sh.head_dim, kvh = head / (sh.n_heads / sh.n_kv_heads);
  const int kv_dim = sh.n_kv_heads * hd;
  const int ctx = b.row_pos[row] + 1;
  const int* table = b.tables + b.seq_table[b.row_seq[row]];
  const float* qh = q + (int64_t(row) * sh.n_heads + head) * hd;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nw = blockDim.x / 32;
  auto slot_of = [&](int j) { return int64_t(table[j / sh.block_size]) * sh.block_size + j % sh.block_size; };

  float mx = -INFINITY;
  for (int j = threadIdx.x; j < ctx; j += blockDim.x) {
    const int64_t slot = slot_of(j);
    float s = 0.0f;
    for (int d = 0; d < hd; ++d) s += qh[d] * kv_elem<K>(kv.k, kv.k_scale, slot, kv_dim, sh.n_kv_heads, kvh, hd, d);
    s *= sh.scale;
    sc[j] = s;
    mx = fmaxf(mx, s);
  }
  mx = warp_max(mx);
  if (lane == 0) red[warp] = mx;
  __syncthreads();
  mx = red[0];
  for (int w = 1; w < nw; ++w) mx = fmaxf(mx, red[w]);
  __syncthreads();
  float sum = 0.0f;
  for (int j = threadIdx.x; j < ctx; j += blockDim.x) {
    const float e = expf(sc[j] - mx);
    sc[j] = e;
    sum += e;
  }
  sum = warp_sum(sum);
  if (lane == 0) red[warp] = sum;
  __syncthreads();
  sum = 0.0f;
  for (int w = 0; w < nw; ++w) sum += red[w];
  const float inv = 1.0f / sum;
  for (int j = threadIdx.x; j < ctx; j += blockDim.x) sc[j] *= inv;
  __syncthreads();
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    float o = 0.0f;
    for (int j = 0; j < ctx; ++j) o += sc[j] * kv_elem<K>(kv.v, kv.v_scale, slot_of(j), kv_dim, sh.n_kv_heads, kvh, hd, d);
    out[(int64_t(row) * sh.n_heads + head) * hd + d] = o;
  }
  if (weights && row >= first_row && row < first_row + n_weight_rows) {
    float* w = weights + (int64_t(row - first_row) * sh.n_heads + head) * weights_stride;
    for (int j = threadIdx.x; j < ctx; j += blockDim.x) w[j] = sc[j];
  }
}

template <int NC, KVDType K>
cudaError_t launch_tiled(const float* q, const KVLayer& kv, const AttentionBatch& b, const AttentionShape& sh,
                         const Split& sp, float* ws, cudaStream_t s) {
  constexpr int HD = NC * 32;
  const size_t smem = sizeof(float) * (size_t(kMaxPairs) * HD + 2 * size_t(kTile) * (HD + 1));
  static const cudaError_t attr = cudaFuncSetAttribute(attention_tiled_kernel<NC, K>,
                                                       cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                       static_cast<int>(smem));
  if (attr != cudaSuccess) return attr;
  const dim3 grid(static_cast<unsigned>(b.n_tiles), static_cast<unsigned>(sh.n_kv_heads), static_cast<unsigned>(sp.n));
  LLMWB_LAUNCH(grid, kWarps * 32, smem, s, attention_tiled_kernel<NC, K>)(q, kv, b, sh, sp.len, sp.n, ws);
  return cudaGetLastError();
}

template <int NC, KVDType K>
cudaError_t launch_decode(const float* q, const KVLayer& kv, const AttentionBatch& b, const AttentionShape& sh,
                          const Split& sp, float* ws, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>(b.n_rows), static_cast<unsigned>((sh.n_heads + kWarps - 1) / kWarps),
                  static_cast<unsigned>(sp.n));
  LLMWB_LAUNCH(grid, kWarps * 32, 0, s, attention_decode_kernel<NC, K>)(q, kv, b, sh, sp.len, sp.n, ws);
  return cudaGetLastError();
}

// Calls f(std::integral_constant<int, nc>) for nc = head_dim / 32 in 1..8 (the kernels'
// compile-time output dims per lane); other values: cudaErrorInvalidValue (tiled_ok excludes them).
template <class F>
cudaError_t with_head_chunks(int nc, F&& f) {
  switch (nc) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 5: return f(std::integral_constant<int, 5>{});
    case 6: return f(std::integral_constant<int, 6>{});
    case 7: return f(std::integral_constant<int, 7>{});
    case 8: return f(std::integral_constant<int, 8>{});
    default: return cudaErrorInvalidValue;
  }
}

// A batch of single-token tiles (pure decode) with GQA groups of at most 2 heads.
bool use_decode_kernel(const AttentionBatch& b, const AttentionShape& sh) {
  return b.n_tiles == b.n_rows && sh.n_heads / sh.n_kv_heads <= 2;
}

}  // namespace

int attention_tile_rows(int group) { return tile_rows_for(group); }

int64_t attention_workspace_floats(const AttentionBatch& b, const AttentionShape& sh, int num_sms) {
  if (!tiled_ok(sh) || b.n_rows == 0) return 0;
  const Split sp = choose_split(b, sh, num_sms);
  return int64_t(b.n_rows) * sh.n_heads * sp.n * (sh.head_dim + 2);
}

cudaError_t attention(const float* q, const KVLayer& kv, const AttentionBatch& b, const AttentionShape& sh,
                      float* workspace, int num_sms, float* out, cudaStream_t s) {
  if (b.n_rows <= 0) return cudaSuccess;
  if (!tiled_ok(sh)) return attention_naive(q, kv, b, sh, out, nullptr, 0, 0, 0, s);
  const Split sp = choose_split(b, sh, num_sms);
  const bool decode = use_decode_kernel(b, sh);
  const cudaError_t e = with_head_chunks(sh.head_dim / 32, [&](auto nc) {
    constexpr int NC = decltype(nc)::value;
    switch (kv.kind) {
      case KVDType::INT8:
        return decode ? launch_decode<NC, KVDType::INT8>(q, kv, b, sh, sp, workspace, s)
                      : launch_tiled<NC, KVDType::INT8>(q, kv, b, sh, sp, workspace, s);
      case KVDType::F16:
        return decode ? launch_decode<NC, KVDType::F16>(q, kv, b, sh, sp, workspace, s)
                      : launch_tiled<NC, KVDType::F16>(q, kv, b, sh, sp, workspace, s);
      case KVDType::F32: break;
    }
    return decode ? launch_decode<NC, KVDType::F32>(q, kv, b, sh, sp, workspace, s)
                  : launch_tiled<NC, KVDType::F32>(q, kv, b, sh, sp, workspace, s);
  });
  if (e != cudaSuccess) return e;
  LLMWB_LAUNCH(dim3(static_cast<unsigned>(b.n_rows), static_cast<unsigned>(sh.n_heads)), static_cast<unsigned>(sh.head_dim), 0, s, attention_combine_kernel)(workspace, sh.n_heads, sh.head_dim, sp.n,
                                                                         out);
  return cudaGetLastError();
}

namespace {
template <KVDType K>
cudaError_t launch_naive(const float* q, const KVLayer& kv, const AttentionBatch& b, const AttentionShape& sh,
                         float* out, float* weights, int first_row, int n_weight_rows, int weights_stride,
                         cudaStream_t s) {
  const size_t smem = sizeof(float) * static_cast<size_t>(b.max_ctx);
  if (smem > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(attention_naive_kernel<K>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(smem));
    if (e != cudaSuccess) return e;
  }
  LLMWB_LAUNCH(dim3(static_cast<unsigned>(b.n_rows), static_cast<unsigned>(sh.n_heads)), 128, smem, s,
               attention_naive_kernel<K>)(q, kv, b, sh, out, weights, first_row, n_weight_rows, weights_stride);
  return cudaGetLastError();
}
}  // namespace

cudaError_t attention_naive(const float* q, const KVLayer& kv, const AttentionBatch& b, const AttentionShape& sh,
                            float* out, float* weights, int first_row, int n_weight_rows, int weights_stride,
                            cudaStream_t s) {
  if (b.n_rows <= 0) return cudaSuccess;
  switch (kv.kind) {
    case KVDType::INT8:
      return launch_naive<KVDType::INT8>(q, kv, b, sh, out, weights, first_row, n_weight_rows, weights_stride, s);
    case KVDType::F16:
      return launch_naive<KVDType::F16>(q, kv, b, sh, out, weights, first_row, n_weight_rows, weights_stride, s);
    case KVDType::F32: break;
  }
  return launch_naive<KVDType::F32>(q, kv, b, sh, out, weights, first_row, n_weight_rows, weights_stride, s);
}

}  // namespace llmwb::cuda
