// kv_cache.h — the physical KV block pool: the memory behind BlockManager's block ids.
//
// Layout per layer: K[block][slot][kv_head][head_dim] and the same for V, so one block of one
// layer is contiguous (copy-on-write copies whole blocks) and a token's K for all kv heads is
// one contiguous run (the attention loop walks slots). Storage is allocated untouched: pages
// become resident only as blocks are first written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace llmwb {

class KVCache {
 public:
  KVCache(int n_layers, int num_blocks, int block_size, int n_kv_heads, int head_dim);

  // Bytes one block takes over all layers, K and V (f32).
  static uint64_t bytes_per_block(int n_layers, int block_size, int n_kv_heads, int head_dim);

  int num_blocks() const { return num_blocks_; }
  int block_size() const { return block_size_; }
  int kv_dim() const { return kv_dim_; }
  uint64_t total_bytes() const;

  // K / V of token slot `slot` (= block * block_size + offset) in `layer`: kv_dim floats.
  float* k(int layer, int64_t slot) { return k_.get() + index(layer, slot); }
  float* v(int layer, int64_t slot) { return v_.get() + index(layer, slot); }
  const float* k(int layer, int64_t slot) const { return k_.get() + index(layer, slot); }
  const float* v(int layer, int64_t slot) const { return v_.get() + index(layer, slot); }

  void copy_block(int src, int dst);   // all layers, K and V

 private:
  size_t index(int layer, int64_t slot) const {
    return (static_cast<size_t>(layer) * num_blocks_ * block_size_ + static_cast<size_t>(slot)) * kv_dim_;
  }
  int n_layers_, num_blocks_, block_size_, kv_dim_;
  std::unique_ptr<float[]> k_, v_;
};

}  // namespace llmwb
