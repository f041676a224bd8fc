#include "kv/kv_cache.h"

#include <cstring>

namespace llmwb {

KVCache::KVCache(int n_layers, int num_blocks, int block_size, int n_kv_heads, int head_dim)
    : n_layers_(n_layers), num_blocks_(num_blocks), block_size_(block_size), kv_dim_(n_kv_heads * head_dim) {
  const size_t n = static_cast<size_t>(n_layers) * num_blocks * block_size * kv_dim_;
  // new T[] without () leaves the memory untouched, so unused blocks cost no resident memory.
  k_.reset(new float[n]);
  v_.reset(new float[n]);
}

uint64_t KVCache::bytes_per_block(int n_layers, int block_size, int n_kv_heads, int head_dim) {
  return 2ull * n_layers * block_size * n_kv_heads * head_dim * sizeof(float);
}

uint64_t KVCache::total_bytes() const {
  return bytes_per_block(n_layers_, block_size_, 1, kv_dim_) * num_blocks_;
}

void KVCache::copy_block(int src, int dst) {
  const size_t n = static_cast<size_t>(block_size_) * kv_dim_ * sizeof(float);
  for (int l = 0; l < n_layers_; ++l) {
    std::memcpy(k(l, int64_t(dst) * block_size_), k(l, int64_t(src) * block_size_), n);
    std::memcpy(v(l, int64_t(dst) * block_size_), v(l, int64_t(src) * block_size_), n);
  }
}

}  // namespace llmwb
