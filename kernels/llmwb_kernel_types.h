// llmwb_kernel_types.h — the plain types the engine and the CUDA kernels share, defined once:
// the KV cache's element type and one logits row's sampling parameters as they travel to a
// device. No CUDA here: the engine includes this file in every build.
#pragma once

#include <cstdint>

namespace llmwb {

// K/V element type (EngineConfig::kv_dtype "f32", "f16", "int8"): the host KVCache and the
// device pool hold the same bytes per slot.
//  F32:  floats.
//  INT8: int8 codes, an element is scale * code with one f32 scale per (layer, slot, KV head):
//        scale = |max| / 127 over the head's dims, code = round(x / scale).
//  F16:  IEEE binary16 bits, x saturated to [-65504, 65504] (NaN kept), rounded to nearest even.
enum class KVDType : uint8_t { F32, INT8, F16 };

// One logits row sampled as the CPU sampler samples it (engine/sample/sampler.h) without a
// repetition penalty.
struct RowSampling {
  float temperature = 0.0f;   // <= 0: greedy (the argmax, lowest id on ties; prob under the plain softmax)
  int top_k = 0;              // 0 or >= vocab: off
  float top_p = 1.0f;         // 1: off
  float min_p = 0.0f;         // 0: off
  double u = 0.0;             // uniform in [0, 1), drawn by the host from the sequence's RNG
};

}  // namespace llmwb
