// sampling.cu — sampling on the device: the argmax of each logits row, and temperature / top-k /
// top-p / min-p sampling from a uniform number the host draws from the sequence's RNG, both as
// the CPU sampler defines them (same candidates, same order, same token for the same u), so a
// decode step copies back an int and a float per sequence instead of a vocabulary of floats.
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

__device__ double block_sum(double v, double* red) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) red[warp] = v;
  __syncthreads();
  double t = 0.0;
  for (int w = 0; w < kThreads / 32; ++w) t += red[w];
  return t;
}

__device__ uint64_t block_min(uint64_t v, uint64_t* red) {
  for (int o = 16; o > 0; o >>= 1) {
    const uint64_t o2 = __shfl_xor_sync(0xffffffffu, v, o);
    v = o2 < v ? o2 : v;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) red[warp] = v;
  __syncthreads();
  uint64_t t = red[0];
  for (int w = 1; w < kThreads / 32; ++w) t = red[w] < t ? red[w] : t;
  return t;
}

// The row's largest logit and its id (the lowest id on ties), in every thread.
__device__ void row_max(const float* row, int vocab, float& mx, int& best) {
  __shared__ float sv[kThreads / 32];
  __shared__ int si[kThreads / 32];
  float v = -INFINITY;
  int idx = vocab;   // past the end: loses every tie
  for (int j = threadIdx.x; j < vocab; j += blockDim.x) better(v, idx, row[j], j);
  for (int o = 16; o > 0; o >>= 1) better(v, idx, __shfl_xor_sync(0xffffffffu, v, o), __shfl_xor_sync(0xffffffffu, idx, o));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();   // sv / si of a previous call are consumed
  if (lane == 0) sv[warp] = v, si[warp] = idx;
  __syncthreads();
  mx = sv[0];
  best = si[0];
  for (int w = 1; w < kThreads / 32; ++w) better(mx, best, sv[w], si[w]);
}

// 1 / sum_j e^(l_j - max) in double: the CPU sampler's probability of a greedy token.
__device__ float greedy_prob(const float* row, int vocab, float mx, double* red) {
  double sum = 0.0;
  for (int j = threadIdx.x; j < vocab; j += blockDim.x) sum += exp(double(row[j]) - double(mx));
  return static_cast<float>(1.0 / block_sum(sum, red));
}

// out[row] = the argmax; prob[row] (when prob is set) = its probability under the plain softmax.
__global__ void argmax_kernel(const float* logits, int vocab, int* out, float* prob) {
  __shared__ double red[kThreads / 32];
  const float* row = logits + int64_t(blockIdx.x) * vocab;
  float mx;
  int best;
  row_max(row, vocab, mx, best);
  const float pr = prob ? greedy_prob(row, vocab, mx, red) : 0.0f;   // prob is the same for the whole block
  if (threadIdx.x == 0) {
    out[blockIdx.x] = best < vocab ? best : 0;
    if (prob) prob[blockIdx.x] = pr;
  }
}

// The CPU sampler's candidate order as one integer: a larger key comes first (a larger
// probability, then the lower id). e >= 0, so its float bits order as its value.
__device__ __forceinline__ uint64_t rank_key(float e, int id) {
  return (uint64_t(__float_as_uint(e)) << 32) | uint64_t(0xFFFFFFFFu - unsigned(id));
}

// The largest K >= lo for which the block-uniform, non-increasing predicate holds, given that it
// holds at lo: one bit at a time from the top (64 block-wide reductions).
template <class Pred>
__device__ uint64_t largest_key(uint64_t lo, Pred&& holds) {
  uint64_t k = 0;
  for (int bit = 63; bit >= 0; --bit) {
    const uint64_t cand = k | (uint64_t(1) << bit);
    if (cand <= lo || holds(cand)) k = cand;
  }
  return k < lo ? lo : k;
}

// One block per row, the CPU sampler's definition (engine/sample/sampler.cpp) step by step:
// e_j = expf((l_j - max) / T); candidates in descending e, ties to the lower id; top-k keeps
// the first k; top-p the shortest prefix whose mass (of all e) reaches top_p; min-p the prefix
// with e >= min_p (e of the most likely is 1); probabilities renormalized over the kept set as
// floats; then the first candidate whose running sum (double) exceeds u. Each cut is a key
// found by bisection over the rank keys (block-wide counts and sums; nothing is sorted).
__global__ void sample_kernel(const float* logits, int vocab, const RowSampling* params, int* out, float* prob) {
  __shared__ double red[kThreads / 32];
  __shared__ uint64_t redk[kThreads / 32];
  const float* row = logits + int64_t(blockIdx.x) * vocab;
  const RowSampling p = params[blockIdx.x];
  float mx;
  int best;
  row_max(row, vocab, mx, best);
  if (!(p.temperature > 0.0f)) {
    const float pr = greedy_prob(row, vocab, mx, red);
    if (threadIdx.x == 0) out[blockIdx.x] = best < vocab ? best : 0, prob[blockIdx.x] = pr;
    return;
  }
  const float T = p.temperature;
  auto e_of = [&](float x) { return expf((x - mx) / T); };
  double s = 0.0;
  for (int j = threadIdx.x; j < vocab; j += blockDim.x) s += double(e_of(row[j]));
  const double sum = block_sum(s, red);
  // Kept: key >= cut (top-k, top-p) and e >= min_p.
  uint64_t cut = 0;
  if (p.top_k > 0 && p.top_k < vocab) {
    cut = largest_key(0, [&](uint64_t K) {
      double n = 0.0;
      for (int j = threadIdx.x; j < vocab; j += blockDim.x) n += rank_key(e_of(row[j]), j) >= K ? 1.0 : 0.0;
      return block_sum(n, red) >= double(p.top_k);
    });
  }
  auto mass_from = [&](uint64_t K) {   // sum of e / sum over the candidates from K on (within the cut)
    double m = 0.0;
    for (int j = threadIdx.x; j < vocab; j += blockDim.x) {
      const float e = e_of(row[j]);
      const uint64_t key = rank_key(e, j);
      if (key >= K && key >= cut) m += double(e) / sum;
    }
    return block_sum(m, red);
  };
  if (p.top_p < 1.0f && mass_from(cut) >= double(p.top_p))
    cut = largest_key(cut, [&](uint64_t K) { return mass_from(K) >= double(p.top_p); });
  const double thr = double(p.min_p);   // times the most likely token's e, which is 1
  auto kept = [&](float e, uint64_t key) { return key >= cut && (p.min_p <= 0.0f || double(e) >= thr); };
  double k = 0.0;
  for (int j = threadIdx.x; j < vocab; j += blockDim.x) {
    const float e = e_of(row[j]);
    if (kept(e, rank_key(e, j))) k += double(e);
  }
  const double kept_sum = block_sum(k, red);
  auto pf = [&](float e) { return static_cast<float>(double(e) / kept_sum); };
  auto cdf_from = [&](uint64_t K) {   // running sum of the kept probabilities up to the candidate at K
    double m = 0.0;
    for (int j = threadIdx.x; j < vocab; j += blockDim.x) {
      const float e = e_of(row[j]);
      const uint64_t key = rank_key(e, j);
      if (key >= K && kept(e, key)) m += double(pf(e));
    }
    return block_sum(m, red);
  };
  uint64_t chosen;
  if (cdf_from(0) > p.u) {
    chosen = largest_key(0, [&](uint64_t K) { return cdf_from(K) > p.u; });
  } else {
    // Rounding left u past the last candidate: the CPU sampler takes the last one with p > 0.
    uint64_t lo = ~uint64_t(0);
    for (int j = threadIdx.x; j < vocab; j += blockDim.x) {
      const float e = e_of(row[j]);
      const uint64_t key = rank_key(e, j);
      if (kept(e, key) && pf(e) > 0.0f && key < lo) lo = key;
    }
    chosen = block_min(lo, redk);
  }
  if (threadIdx.x == 0) {
    int tok = static_cast<int>(0xFFFFFFFFu - unsigned(chosen & 0xFFFFFFFFu));
    if (tok < 0 || tok >= vocab) tok = best < vocab ? best : 0;
    out[blockIdx.x] = tok;
    prob[blockIdx.x] = pf(e_of(row[tok]));
  }
}

}  // namespace

cudaError_t sample_rows(const float* logits, int n_rows, int vocab, const RowSampling* params, int* out,
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
