// kv_cache.h — the physical KV block pool: the memory behind BlockManager's block ids.
//
// Layout: K[block][layer][slot][kv_head][head_dim] and the same for V: a block holds all its
// layers, one block of one layer is contiguous (copy-on-write copies whole blocks, layer by
// layer) and a token's K for all kv heads is one contiguous run (the attention loop walks
// slots). Storage is allocated untouched: pages become resident only as blocks are first
// written, on 2 MiB pages where the kernel allows, since attention reads a head's rows a slot
// apart (make_huge_array). Block-major, the blocks in use fill whole pages from the pool's
// start (freed blocks are reused first); layer-major, each layer's part of the pool would
// start a 2 MiB page of its own (+67 MB resident for tinyllama's 22 layers at 640 tokens).
//
// Elements are f32; f16 (--kv-dtype f16, half the memory; llama.cpp's default cache type): IEEE
// binary16 rounded to nearest even, values beyond its range saturated at +-65504 instead of
// becoming inf (an inf key would turn every score of its row into NaN); or int8 (--kv-dtype
// int8, about a quarter of the memory): x = scale * q, q in [-127, 127], with one f32 scale per
// (layer, slot, kv head) for K and one for V, i.e. a block's scales are a [block_size x
// n_kv_heads] array beside its codes.
//
// Why not one scale per (block, head): tokens arrive one at a time, so such a scale would
// have to grow (and the block's earlier slots be requantized) when a later token is larger.
// Then a slot's value depends on when it is read: a prefill stores a whole chunk before its
// attention runs, so its early queries would see their block requantized by later tokens that
// one-token decoding had not stored yet, and batched != sequential. A scale per slot never
// changes once written, so every read of a slot sees the same bytes however the tokens were
// batched or chunked, and prefix-cache hits and copy-on-write copies are exact. The price is
// 4 bytes per head_dim codes (6% at head_dim 64, 3% at 128), and the error is smaller than a
// shared scale's (each token's own |max| sets its step).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "llmwb_kernel_types.h"
#include "memory/huge_page_allocator.h"

namespace llmwb {

// "f32" / "f16" / "int8" (EngineConfig::kv_dtype); false for anything else.
bool kv_dtype_from_name(const std::string& name, KVDType* out);
const char* kv_dtype_name(KVDType t);

// The f16 pool's element for x: x saturated to [-65504, 65504] (NaN stays NaN), then rounded to
// the nearest IEEE half, ties to even. The CUDA pool's store_kv writes the same bits.
uint16_t kv_half(float x);

class KVCache {
 public:
  KVCache(int n_layers, int num_blocks, int block_size, int n_kv_heads, int head_dim, KVDType dtype = KVDType::F32);

  // Bytes one block takes over all layers, K and V (elements plus, for int8, the scales).
  static uint64_t bytes_per_block(int n_layers, int block_size, int n_kv_heads, int head_dim,
                                  KVDType dtype = KVDType::F32);

  KVDType dtype() const { return dtype_; }
  int num_blocks() const { return num_blocks_; }
  int block_size() const { return block_size_; }
  int kv_dim() const { return kv_dim_; }
  int n_kv_heads() const { return n_kv_heads_; }
  int head_dim() const { return head_dim_; }
  uint64_t total_bytes() const;

  // Writes one token's K and V (kv_dim floats each) into `slot` (= block * block_size +
  // offset) of `layer`. f16: kv_half(x); int8: per kv head, scale = |max| / 127 and
  // q = round(x / scale).
  void store(int layer, int64_t slot, const float* k, const float* v);
  // The token's K / V back as floats (tests, debugging; attention reads in place).
  void load(int layer, int64_t slot, float* k, float* v) const;

  // f32 pools: K / V of token slot `slot` in `layer`, kv_dim floats.
  float* k(int layer, int64_t slot) { return k_.get() + index(layer, slot); }
  float* v(int layer, int64_t slot) { return v_.get() + index(layer, slot); }
  const float* k(int layer, int64_t slot) const { return k_.get() + index(layer, slot); }
  const float* v(int layer, int64_t slot) const { return v_.get() + index(layer, slot); }
  // f16 pools: the IEEE half bits of a slot's K / V, kv_dim of them.
  const uint16_t* k16(int layer, int64_t slot) const { return k16_.get() + index(layer, slot); }
  const uint16_t* v16(int layer, int64_t slot) const { return v16_.get() + index(layer, slot); }
  // int8 pools: the codes of a slot (kv_dim) and the scale of one of its kv heads.
  const int8_t* k8(int layer, int64_t slot) const { return k8_.get() + index(layer, slot); }
  const int8_t* v8(int layer, int64_t slot) const { return v8_.get() + index(layer, slot); }
  float k_scale(int layer, int64_t slot, int kv_head) const { return k_scale_[scale_index(layer, slot, kv_head)]; }
  float v_scale(int layer, int64_t slot, int kv_head) const { return v_scale_[scale_index(layer, slot, kv_head)]; }

  void copy_block(int src, int dst);   // all layers, K and V (and their scales)

 private:
  // Slot `slot` of `layer` counted in tokens: block-major (see the top of this file).
  size_t token_index(int layer, int64_t slot) const {
    const int64_t b = slot / block_size_, i = slot % block_size_;
    return (static_cast<size_t>(b) * n_layers_ + static_cast<size_t>(layer)) * block_size_ + static_cast<size_t>(i);
  }
  size_t index(int layer, int64_t slot) const { return token_index(layer, slot) * kv_dim_; }
  size_t scale_index(int layer, int64_t slot, int kv_head) const {
    return token_index(layer, slot) * n_kv_heads_ + static_cast<size_t>(kv_head);
  }
  void allocate(size_t elements);   // the pools for `elements` K (and V) elements
  void store_int8(int8_t* codes, float* scales, int layer, int64_t slot, const float* x);

  int n_layers_, num_blocks_, block_size_, n_kv_heads_, head_dim_, kv_dim_;
  KVDType dtype_;
  HugeArray<float> k_, v_;   // on 2 MiB pages where THP allows (huge_page_allocator.h)
  HugeArray<uint16_t> k16_, v16_;
  HugeArray<int8_t> k8_, v8_;
  HugeArray<float> k_scale_, v_scale_;
};

}  // namespace llmwb
