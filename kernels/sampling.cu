// sampling.cu — sampling on the device: the argmax of each logits row, and temperature /
// top-k / top-p sampling from a uniform number the host draws, so a decode step could copy back
// one int per sequence instead of a vocabulary of floats (the engine still samples on the host:
// see docs/CUDA.md).
#include <cuda_runtime.h>

#include <cstdint>

#include "launch.cuh"
#include "llmwb_kernels.h"

namespace llmwb::cuda {
namespace {

constexpr int kThreads = 256;

// Larger value wins; on a tie the lower index (the CPU sampler's std::max_element order).
__device__ __forceinline__ void better(float& v, int& i, float v2, int i2) {
  if (v2 > v || (v2 == v && i2 < i) || (v != v && v2 == v2)) v = v2, i = i2;   // NaN loses
}

__device__ float block_sum(float v, float* red) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float t = 0.0f;
  for (int w = 0; w < kThreads / 32; ++w) t += red[w];
  return t;
}

// out[row] = the argmax; prob[row] (when prob is set) = its probability under the plain softmax,
// 1 / sum_j e^(l_j - l_max), as the CPU sampler reports a greedy token's.
__global__ void argmax_kernel(const float* logits, int vocab, int* out, float* prob) {
  const float* row = logits + int64_t(blockIdx.x) * vocab;
  float v = -INFINITY;
  int idx = vocab;   // past the end: loses every tie
  for (int j = threadIdx.x; j < vocab; j += blockDim.x) better(v, idx, row[j], j);
  for (int o = 16; o > 0; o >>= 1) better(v, idx, __shfl_xor_sync(0xffffffffu, v, o), __shfl_xor_sync(0xffffffffu, idx, o));
  __shared__ float sv[kThreads / 32];
  __shared__ int si[kThreads / 32];
  __shared__ float red[kThreads / 32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) sv[warp] = v, si[warp] = idx;
  __syncthreads();
  if (warp == 0) {
    v = lane < kThreads / 32 ? sv[lane] : -INFINITY;
    idx = lane < kThreads / 32 ? si[lane] : vocab;
    for (int o = 16; o > 0; o >>= 1)
      better(v, idx, __shfl_xor_sync(0xffffffffu, v, o), __shfl_xor_sync(0xffffffffu, idx, o));
    if (lane == 0) {
      out[blockIdx.x] = idx < vocab ? idx : 0;
      sv[0] = v;   // warp 0's lanes read sv before the shuffles above
    }
  }
  if (!prob) return;   // the same for the whole block
  __syncthreads();
  const float mx = sv[0];
  float sum = 0.0f;
  for (int j = threadIdx.x; j < vocab; j += blockDim.x) sum += expf(row[j] - mx);
  sum = block_sum(sum, red);
  if (threadIdx.x == 0) prob[blockIdx.x] = 1.0f / sum;
}

// Float keys ordered as unsigned integers (larger float, larger key; NaN sorts above +inf and
// is never kept because its probability is NaN... callers pass finite logits).
__device__ __forceinline__ unsigned order_key(float f) {
  const unsigned u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}


// One block per row: temperature softmax, the top-k and top-p thresholds found by bisection on
// the logits' order keys (each step one block-wide count or probability sum, so nothing is
// sorted), then inverse-CDF sampling in token-id order with the row's uniform u.
__global__ void sample_kernel(const float* logits, int vocab, const DeviceSampling* params, int* out, float* prob) {
  __shared__ float red[kThreads / 32];
  __shared__ float scan[kThreads];
  __shared__ int found;
  const float* row = logits + int64_t(blockIdx.x) * vocab;
  const DeviceSampling p = params[blockIdx.x];
  // Greedy and the maximum.
  float v = -INFINITY;
  int idx = vocab;
  for (int j = threadIdx.x; j < vocab; j += blockDim.x) better(v, idx, row[j], j);
  for (int o = 16; o > 0; o >>= 1) better(v, idx, __shfl_xor_sync(0xffffffffu, v, o), __shfl_xor_sync(0xffffffffu, idx, o));
  __shared__ float sv[kThreads / 32];
  __shared__ int si[kThreads / 32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) sv[warp] = v, si[warp] = idx;
  __syncthreads();
  float mx = sv[0];
  int best = si[0];
  for (int w = 1; w < kThreads / 32; ++w) better(mx, best, sv[w], si[w]);
  if (p.temperature <= 0.0f) {
    if (threadIdx.x == 0) out[blockIdx.x] = best < vocab ? best : 0, prob[blockIdx.x] = 1.0f;
    return;
  }
  const float inv_t = 1.0f / p.temperature;
  auto weight = [&](float x) { return __expf((x - mx) * inv_t); };
  // Top-k: the largest key K with at least k keys >= K (ties at the boundary all stay).
  unsigned lo = 0;
  if (p.top_k > 0 && p.top_k < vocab) {
    for (int bit = 31; bit >= 0; --bit) {
      const unsigned cand = lo | (1u << bit);
      float cnt = 0.0f;
      for (int j = threadIdx.x; j < vocab; j += blockDim.x) cnt += order_key(row[j]) >= cand ? 1.0f : 0.0f;
      if (block_sum(cnt, red) >= static_cast<float>(p.top_k)) lo = cand;
    }
  }
  // Top-p: the largest key K2 >= lo whose tokens (key >= K2) hold at least top_p of the mass.
  if (p.top_p < 1.0f) {
    float mass = 0.0f;
    for (int j = threadIdx.x; j < vocab; j += blockDim.x)
      if (order_key(row[j]) >= lo) mass += weight(row[j]);
    const float need = p.top_p * block_sum(mass, red);
    // Binary search on [lo, 2^32): mass(key >= good) >= need holds at good = lo, not at bad.
    uint64_t good = lo, bad = uint64_t(1) << 32;
    while (bad - good > 1) {
      const uint64_t mid = good + (bad - good) / 2;
      const unsigned cand = static_cast<unsigned>(mid);
      float m2 = 0.0f;
      for (int j = threadIdx.x; j < vocab; j += blockDim.x)
        if (order_key(row[j]) >= cand) m2 += weight(row[j]);
      if (block_sum(m2, red) >= need)
        good = mid;
      else
        bad = mid;
    }
    const unsigned k2 = static_cast<unsigned>(good);
    lo = k2;
  }
  // Inverse CDF in id order: each thread sums a contiguous chunk, an exclusive scan over the
  // chunks, and the chunk holding the crossing walks its ids.
  const int chunk = (vocab + kThreads - 1) / kThreads;
  const int b0 = threadIdx.x * chunk, b1 = min(vocab, b0 + chunk);
  float local = 0.0f;
  for (int j = b0; j < b1; ++j)
    if (order_key(row[j]) >= lo) local += weight(row[j]);
  scan[threadIdx.x] = local;
  if (threadIdx.x == 0) found = -1;
  __syncthreads();
  if (threadIdx.x == 0) {
    float run = 0.0f;
    for (int t = 0; t < kThreads; ++t) {
      const float x = scan[t];
      scan[t] = run;
      run += x;
    }
    red[0] = run;   // total kept mass
  }
  __syncthreads();
  const float total = red[0];
  const float target = p.u * total;
  if (local > 0.0f && scan[threadIdx.x] <= target && target < scan[threadIdx.x] + local) {
    // Summed in the order `local` was, so the walk reaches `local` > rem and must cross.
    const float rem = target - scan[threadIdx.x];
    float run = 0.0f;
    for (int j = b0; j < b1; ++j) {
      if (order_key(row[j]) < lo) continue;
      run += weight(row[j]);
      if (run > rem) {
        found = j;
        break;
      }
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    // Rounding can leave the target past the last crossing: take the most likely token then.
    const int tok = found >= 0 ? found : (best < vocab ? best : 0);
    out[blockIdx.x] = tok;
    prob[blockIdx.x] = weight(row[tok]) / total;
  }
}

}  // namespace

cudaError_t sample_rows(const float* logits, int n_rows, int vocab, const DeviceSampling* params, int* out,
                        float* prob, cudaStream_t s) {
  if (n_rows <= 0 || vocab <= 0) return cudaSuccess;
  LLMWB_LAUNCH(static_cast<unsigned>(n_rows), kThreads, 0, s, sample_kernel)(logits, vocab, params, out, prob);
  return cudaGetLastError();
}

cudaError_t argmax_rows(const float* logits, int n_rows, int vocab, int* out, float* prob, cudaStream_t s) {
  if (n_rows <= 0 || vocab <= 0) return cudaSuccess;
  LLMWB_LAUNCH(static_cast<unsigned>(n_rows), kThreads, 0, s, argmax_kernel)(logits, vocab, out, prob);
  return cudaGetLastError();
}

}  // namespace llmwb::cuda
