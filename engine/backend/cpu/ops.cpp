// ops.cpp — see ops.h.
#include "backend/cpu/ops.h"

#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "backend/cpu/matmul.h"
#include "model/tensor.h"

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

LLMWB_OPS_CLONES float dot_f32_i8(const float* a, const int8_t* b, int64_t n) {
  float s[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) s[j] += a[i + j] * static_cast<float>(b[i + j]);
  }
  float total = 0.0f;
  for (int j = 0; j < kLanes; ++j) total += s[j];
  for (; i < n; ++i) total += a[i] * static_cast<float>(b[i]);
  return total;
}

LLMWB_OPS_CLONES void axpy_i8(float* y, float a, const int8_t* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * static_cast<float>(x[i]);
}

namespace {

float sum_lanes(const float* s, const float* a, const uint16_t* b, int64_t i, int64_t n) {
  float total = 0.0f;
  for (int j = 0; j < kLanes; ++j) total += s[j];
  for (; i < n; ++i) total += a[i] * fp16_to_fp32(b[i]);
  return total;
}

float dot_f32_f16_scalar(const float* a, const uint16_t* b, int64_t n) {
  float s[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) s[j] += a[i + j] * fp16_to_fp32(b[i + j]);
  }
  return sum_lanes(s, a, b, i, n);
}

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"   // GCC bug 105593, as in matmul_avx512.cpp
__attribute__((target("avx512f,avx2,fma,f16c"))) float dot_f32_f16_avx512(const float* a, const uint16_t* b,
                                                                          int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m512 x = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i)));
    acc = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), x, acc);
  }
  alignas(64) float s[kLanes];
  _mm512_store_ps(s, acc);
  return sum_lanes(s, a, b, i, n);
}

__attribute__((target("avx2,fma,f16c"))) float dot_f32_f16_avx2(const float* a, const uint16_t* b, int64_t n) {
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();   // lanes 0..7 and 8..15
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m256 xl = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    const __m256 xh = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i + 8)));
    lo = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), xl, lo);
    hi = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), xh, hi);
  }
  alignas(32) float s[kLanes];
  _mm256_store_ps(s, lo);
  _mm256_store_ps(s + 8, hi);
  return sum_lanes(s, a, b, i, n);
}

__attribute__((target("avx512f,avx2,fma,f16c"))) void axpy_f16_avx512(float* y, float a, const uint16_t* x,
                                                                     int64_t n) {
  const __m512 va = _mm512_set1_ps(a);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));
    _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, v, _mm512_loadu_ps(y + i)));
  }
  for (; i < n; ++i) y[i] += a * fp16_to_fp32(x[i]);
}

__attribute__((target("avx2,fma,f16c"))) void axpy_f16_avx2(float* y, float a, const uint16_t* x, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, v, _mm256_loadu_ps(y + i)));
  }
  for (; i < n; ++i) y[i] += a * fp16_to_fp32(x[i]);
}
#pragma GCC diagnostic pop
#endif

}  // namespace

float dot_f32_f16(const float* a, const uint16_t* b, int64_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  switch (simd_level()) {
    case SimdLevel::Avx512: return dot_f32_f16_avx512(a, b, n);
    case SimdLevel::Avx2: return dot_f32_f16_avx2(a, b, n);
    case SimdLevel::Scalar: break;
  }
#endif
  return dot_f32_f16_scalar(a, b, n);
}

void axpy_f16(float* y, float a, const uint16_t* x, int64_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  switch (simd_level()) {
    case SimdLevel::Avx512: axpy_f16_avx512(y, a, x, n); return;
    case SimdLevel::Avx2: axpy_f16_avx2(y, a, x, n); return;
    case SimdLevel::Scalar: break;
  }
#endif
  for (int64_t i = 0; i < n; ++i) y[i] += a * fp16_to_fp32(x[i]);
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
