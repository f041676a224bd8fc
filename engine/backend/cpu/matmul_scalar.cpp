// matmul_scalar.cpp — the portable fallback kernel: one dot product per (row, token), weights
// decoded element by element. Correct on any CPU; the SIMD files are the fast paths. Each
// output is one call of dot_row whatever the batch, so this level is batch-invariant too.
#include <cstring>

#include "backend/cpu/matmul_kernels.h"

namespace llmwb::cpu::kernels {

namespace {


uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// Four partial sums break the dependency chain of one accumulator and let the compiler
// vectorise (float addition is not reassociated without them).
float dot_f32(const float* w, const float* x, int64_t n) {
  float s[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int j = 0; j < 4; ++j) s[j] += w[i + j] * x[i + j];
  }
  for (; i < n; ++i) s[0] += w[i] * x[i];
  return (s[0] + s[1]) + (s[2] + s[3]);
}

float dot_row(DType dt, const uint8_t* row, const float* x, int64_t n) {
  float sum = 0.0f;
  switch (dt) {
    case DType::F32: {
      float tmp[256];
      // Rows in a mapped file need not be float-aligned: copy through a small buffer.
      for (int64_t k = 0; k < n; k += 256) {
        const int64_t m = n - k < 256 ? n - k : 256;
        std::memcpy(tmp, row + 4 * k, static_cast<size_t>(m) * 4);
        sum += dot_f32(tmp, x + k, m);
      }
      return sum;
    }
    case DType::F16:
      for (int64_t k = 0; k < n; ++k) sum += fp16_to_fp32(load_u16(row + 2 * k)) * x[k];
      return sum;
    case DType::BF16:
      for (int64_t k = 0; k < n; ++k) sum += bf16_to_fp32(load_u16(row + 2 * k)) * x[k];
      return sum;
    default: return sum;   // not handles(): never called
  }
}

bool handles(DType dt) {
  switch (dt) {
    case DType::F32:
    case DType::F16:
    case DType::BF16: return true;
    default: return false;   // quantized types: qmatmul
  }
}

void gemv(const MatmulArgs& a, int64_t r0, int64_t r1) {
  for (int64_t o = r0; o < r1; ++o) {
    const uint8_t* row = a.w + o * a.w_row_bytes;
    for (int64_t t = 0; t < a.n_tokens; ++t) {
      a.y[t * a.y_stride + o] = dot_row(a.dtype, row, a.x + t * a.cols, a.cols);
    }
  }
}

}  // namespace

const KernelSet& scalar_kernels() {
  // No tiled path: the scalar level exists for portability and as the tests' baseline.
  static constexpr KernelSet k = {"scalar", &handles, &gemv, nullptr, nullptr, nullptr, nullptr, 1, 1, 1 << 30, 0};
  return k;
}

}  // namespace llmwb::cpu::kernels
