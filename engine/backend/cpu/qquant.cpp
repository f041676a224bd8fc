// qquant.cpp — the portable activation quantizer of qmatmul (format in qmatmul.cpp). It is
// the reference: the SIMD quantizers (qquant_avx2.cpp, qquant_avx512.cpp) give the same int8
// values, d and c bit for bit on finite input, and the partial last block of a row always
// goes through quantize_block_scalar.
#include <algorithm>
#include <cmath>

#include "backend/cpu/qmatmul_kernels.h"

namespace llmwb::cpu::qkernels {

void quantize_block_scalar(const float* x, int n, int8_t* q, float* d_out, float* c_out) {
  float amax = 0.0f;
  for (int j = 0; j < n; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = activation_inverse_scale(d);
  // Round to nearest even by adding and subtracting 1.5 * 2^23 (exact for |v| < 2^22, and
  // |x * id| <= 127 up to rounding): std::nearbyint is a library call on baseline x86-64.
  // The SIMD quantizers round the same float product with a rounding instruction instead.
  constexpr float kMagic = 12582912.0f;
  int32_t sum = 0;
  for (int j = 0; j < kQB; ++j) {
    const float r = j < n ? (x[j] * id + kMagic) - kMagic : 0.0f;
    const int v = static_cast<int>(std::clamp(r, -127.0f, 127.0f));
    q[j] = static_cast<int8_t>(v);
    sum += v;
  }
  *d_out = d;
  *c_out = d * static_cast<float>(sum);
}

void quantize_blocks_scalar(const float* x, int64_t n_blocks, int8_t* q, float* d, float* c) {
  for (int64_t b = 0; b < n_blocks; ++b) quantize_block_scalar(x + b * kQB, kQB, q + b * kQB, d + b, c + b);
}

}  // namespace llmwb::cpu::qkernels
