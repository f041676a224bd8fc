// ops.cpp — see ops.h.
#include "backend/cpu/ops.h"

#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "backend/cpu/matmul.h"
#include "format/tensor.h"

namespace llmwb::cpu {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define LLMWB_OPS_CLONES __attribute__((target_clones("avx512f", "arch=haswell", "default")))
#else
#define LLMWB_OPS_CLONES
#endif

namespace {

constexpr int kLanes = 16;   // partial sums: one AVX-512 register's worth

LLMWB_OPS_CLONES float sum_squares(const float* x, int64_t n) {
  float s[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) s[j] += x[i + j] * x[i + j];
  }
  float total = 0.0f;
  for (int j = 0; j < kLanes; ++j) total += s[j];
  for (; i < n; ++i) total += x[i] * x[i];
  return total;
}

}  // namespace

LLMWB_OPS_CLONES float dot_f32(const float* a, const float* b, int64_t n) {
  float s[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) s[j] += a[i + j] * b[i + j];
  }
  float total = 0.0f;
  for (int j = 0; j < kLanes; ++j) total += s[j];
  for (; i < n; ++i) total += a[i] * b[i];
  return total;
}

LLMWB_OPS_CLONES void axpy(float* y, float a, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

LLMWB_OPS_CLONES void i8_to_f32(const int8_t* src, float scale, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = scale * static_cast<float>(src[i]);
}

namespace {

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC diagnostic push
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"   // GCC bug 105593, as in matmul_avx512.cpp
#endif
__attribute__((target("avx512f,avx2,f16c"))) void f16_to_f32_avx512(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
  for (; i < n; ++i) dst[i] = fp16_to_fp32(src[i]);
}

__attribute__((target("avx2,f16c"))) void f16_to_f32_avx2(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  for (; i < n; ++i) dst[i] = fp16_to_fp32(src[i]);
}
#pragma GCC diagnostic pop
#endif

}  // namespace

void f16_to_f32(const uint16_t* src, float* dst, int64_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  switch (simd_level()) {
    case SimdLevel::Avx512: f16_to_f32_avx512(src, dst, n); return;
    case SimdLevel::Avx2: f16_to_f32_avx2(src, dst, n); return;
    case SimdLevel::Scalar: break;
  }
#endif
  for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(src[i]);
}

LLMWB_OPS_CLONES void add_inplace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void rmsnorm(float* out, const float* x, const float* weight, int64_t n, float eps) {
  if (n <= 0) return;
  const float inv = 1.0f / std::sqrt(sum_squares(x, n) / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * inv * weight[i];
}

void silu_mul(float* gate, const float* up, int64_t n) {
  if (simd_level() == SimdLevel::Avx512) {
    kernels::silu_mul_avx512(gate, up, n);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void softmax_inplace(float* x, int64_t n) {
  if (n <= 0) return;
  float mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace llmwb::cpu
