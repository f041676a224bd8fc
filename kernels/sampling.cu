// sampling.cu — greedy sampling on the device: the argmax of each logits row, so a greedy
// decode step copies back one int per sequence instead of a vocabulary of floats.
#include <cuda_runtime.h>

#include "llmwb_kernels.h"

namespace llmwb::cuda {
namespace {

constexpr int kThreads = 256;

// Larger value wins; on a tie the lower index (the CPU sampler's std::max_element order).
__device__ __forceinline__ void better(float& v, int& i, float v2, int i2) {
  if (v2 > v || (v2 == v && i2 < i) || (v != v && v2 == v2)) v = v2, i = i2;   // NaN loses
}

__global__ void argmax_kernel(const float* logits, int vocab, int* out) {
  const float* row = logits + int64_t(blockIdx.x) * vocab;
  float v = -INFINITY;
  int idx = vocab;   // past the end: loses every tie
  for (int j = threadIdx.x; j < vocab; j += blockDim.x) better(v, idx, row[j], j);
  for (int o = 16; o > 0; o >>= 1) better(v, idx, __shfl_xor_sync(0xffffffffu, v, o), __shfl_xor_sync(0xffffffffu, idx, o));
  __shared__ float sv[kThreads / 32];
  __shared__ int si[kThreads / 32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) sv[warp] = v, si[warp] = idx;
  __syncthreads();
  if (warp == 0) {
    v = lane < kThreads / 32 ? sv[lane] : -INFINITY;
    idx = lane < kThreads / 32 ? si[lane] : vocab;
    for (int o = 16; o > 0; o >>= 1)
      better(v, idx, __shfl_xor_sync(0xffffffffu, v, o), __shfl_xor_sync(0xffffffffu, idx, o));
    if (lane == 0) out[blockIdx.x] = idx < vocab ? idx : 0;
  }
}

}  // namespace

cudaError_t argmax_rows(const float* logits, int n_rows, int vocab, int* out, cudaStream_t s) {
  if (n_rows <= 0 || vocab <= 0) return cudaSuccess;
  argmax_kernel<<<static_cast<unsigned>(n_rows), kThreads, 0, s>>>(logits, vocab, out);
  return cudaGetLastError();
}

}  // namespace llmwb::cuda
