#include "kv/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>

#include "llmwb/errors.h"

#include "format/tensor.h"

namespace llmwb {

bool kv_dtype_from_name(const std::string& name, KVDType* out) {
  if (name == "f32") *out = KVDType::F32;
  else if (name == "f16") *out = KVDType::F16;
  else if (name == "int8") *out = KVDType::INT8;
  else return false;
  return true;
}

const char* kv_dtype_name(KVDType t) {
  switch (t) {
    case KVDType::F32: return "f32";
    case KVDType::F16: return "f16";
    case KVDType::INT8: return "int8";
  }
  return "f32";
}

uint16_t kv_half(float x) {
  constexpr float kMax = 65504.0f;   // the largest finite half
  return fp32_to_fp16(x > kMax ? kMax : x < -kMax ? -kMax : x);
}

KVCache::KVCache(int n_layers, int num_blocks, int block_size, int n_kv_heads, int head_dim, KVDType dtype)
    : n_layers_(n_layers),
      num_blocks_(num_blocks),
      block_size_(block_size),
      n_kv_heads_(n_kv_heads),
      head_dim_(head_dim),
      kv_dim_(n_kv_heads * head_dim),
      dtype_(dtype) {
  const size_t n = static_cast<size_t>(n_layers) * num_blocks * block_size * kv_dim_;
  // Untouched memory, so unused blocks cost no resident memory. Even so the address space must
  // be granted; a refusal names the pool, its size and what sets it rather than a bare bad_alloc.
  try {
    allocate(n);
  } catch (const std::bad_alloc&) {
    const double gib = static_cast<double>(total_bytes()) / double(1ull << 30);
    char size[64];
    std::snprintf(size, sizeof size, "%.2f GiB", gib);
    throw Error("kv_memory", std::string("cannot allocate the KV cache pool: ") + size + " (" +
                                 std::to_string(total_bytes()) + " bytes, " + std::to_string(num_blocks) + " blocks of " +
                                 std::to_string(block_size) + " tokens, " + kv_dtype_name(dtype) +
                                 "); give a smaller --kv-memory (EngineConfig::kv_memory_bytes) or --max-model-len");
  }
}

void KVCache::allocate(size_t n) {
  if (dtype_ == KVDType::F32) {
    k_ = make_huge_array<float>(n);
    v_ = make_huge_array<float>(n);
  } else if (dtype_ == KVDType::F16) {
    k16_ = make_huge_array<uint16_t>(n);
    v16_ = make_huge_array<uint16_t>(n);
  } else {
    k8_ = make_huge_array<int8_t>(n);
    v8_ = make_huge_array<int8_t>(n);
    const size_t ns = static_cast<size_t>(n_layers_) * num_blocks_ * block_size_ * n_kv_heads_;
    k_scale_ = make_huge_array<float>(ns);
    v_scale_ = make_huge_array<float>(ns);
  }
}

uint64_t KVCache::bytes_per_block(int n_layers, int block_size, int n_kv_heads, int head_dim, KVDType dtype) {
  const uint64_t elems = 2ull * n_layers * block_size * n_kv_heads * head_dim;
  if (dtype == KVDType::F32) return elems * sizeof(float);
  if (dtype == KVDType::F16) return elems * sizeof(uint16_t);
  return elems * sizeof(int8_t) + 2ull * n_layers * block_size * n_kv_heads * sizeof(float);   // + scales
}

uint64_t KVCache::total_bytes() const {
  return bytes_per_block(n_layers_, block_size_, n_kv_heads_, head_dim_, dtype_) * num_blocks_;
}

// One token of one layer into an int8 pool: per kv head h, s = max|x| / 127 (0 for an
// all-zero head: every code 0) and q = clamp(round(x / s), -127, 127); |x - s q| <= s / 2.
void KVCache::store_int8(int8_t* codes, float* scales, int layer, int64_t slot, const float* x) {
  for (int h = 0; h < n_kv_heads_; ++h) {
    const float* xh = x + static_cast<size_t>(h) * head_dim_;
    float amax = 0.0f;
    for (int i = 0; i < head_dim_; ++i) amax = std::max(amax, std::fabs(xh[i]));
    const float s = amax / 127.0f;
    scales[scale_index(layer, slot, h)] = s;
    const float inv = s > 0.0f ? 1.0f / s : 0.0f;
    int8_t* q = codes + index(layer, slot) + static_cast<size_t>(h) * head_dim_;
    for (int i = 0; i < head_dim_; ++i)
      q[i] = static_cast<int8_t>(std::clamp(std::nearbyint(xh[i] * inv), -127.0f, 127.0f));
  }
}

void KVCache::store(int layer, int64_t slot, const float* k, const float* v) {
  if (dtype_ == KVDType::F32) {
    std::memcpy(this->k(layer, slot), k, sizeof(float) * static_cast<size_t>(kv_dim_));
    std::memcpy(this->v(layer, slot), v, sizeof(float) * static_cast<size_t>(kv_dim_));
    return;
  }
  if (dtype_ == KVDType::F16) {
    uint16_t* kd = k16_.get() + index(layer, slot);
    uint16_t* vd = v16_.get() + index(layer, slot);
    for (int i = 0; i < kv_dim_; ++i) {
      kd[i] = kv_half(k[i]);
      vd[i] = kv_half(v[i]);
    }
    return;
  }
  store_int8(k8_.get(), k_scale_.get(), layer, slot, k);
  store_int8(v8_.get(), v_scale_.get(), layer, slot, v);
}

void KVCache::load(int layer, int64_t slot, float* k, float* v) const {
  if (dtype_ == KVDType::F32) {
    std::memcpy(k, this->k(layer, slot), sizeof(float) * static_cast<size_t>(kv_dim_));
    std::memcpy(v, this->v(layer, slot), sizeof(float) * static_cast<size_t>(kv_dim_));
    return;
  }
  if (dtype_ == KVDType::F16) {
    for (int i = 0; i < kv_dim_; ++i) {
      k[i] = fp16_to_fp32(k16(layer, slot)[i]);
      v[i] = fp16_to_fp32(v16(layer, slot)[i]);
    }
    return;
  }
  for (int h = 0; h < n_kv_heads_; ++h) {
    const float ks = k_scale(layer, slot, h), vs = v_scale(layer, slot, h);
    for (int i = 0; i < head_dim_; ++i) {
      const size_t e = static_cast<size_t>(h) * head_dim_ + static_cast<size_t>(i);
      k[e] = ks * static_cast<float>(k8(layer, slot)[e]);
      v[e] = vs * static_cast<float>(v8(layer, slot)[e]);
    }
  }
}

void KVCache::copy_block(int src, int dst) {
  const size_t n = static_cast<size_t>(block_size_) * kv_dim_;
  const int64_t s0 = int64_t(src) * block_size_, d0 = int64_t(dst) * block_size_;
  for (int l = 0; l < n_layers_; ++l) {
    if (dtype_ == KVDType::F32) {
      std::memcpy(k(l, d0), k(l, s0), n * sizeof(float));
      std::memcpy(v(l, d0), v(l, s0), n * sizeof(float));
    } else if (dtype_ == KVDType::F16) {
      std::memcpy(k16_.get() + index(l, d0), k16_.get() + index(l, s0), n * sizeof(uint16_t));
      std::memcpy(v16_.get() + index(l, d0), v16_.get() + index(l, s0), n * sizeof(uint16_t));
    } else {
      std::memcpy(k8_.get() + index(l, d0), k8_.get() + index(l, s0), n);
      std::memcpy(v8_.get() + index(l, d0), v8_.get() + index(l, s0), n);
      const size_t hs = static_cast<size_t>(block_size_) * n_kv_heads_ * sizeof(float);
      std::memcpy(k_scale_.get() + scale_index(l, d0, 0), k_scale_.get() + scale_index(l, s0, 0), hs);
      std::memcpy(v_scale_.get() + scale_index(l, d0, 0), v_scale_.get() + scale_index(l, s0, 0), hs);
    }
  }
}

}  // namespace llmwb
