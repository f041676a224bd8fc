// tensor.cpp — element type tables, IEEE half / bfloat16 conversion, and the GGUF block
// formats Q8_0 and Q4_0 (ggml's reference quantizers, so files we write match llama.cpp's).
#include "model/tensor.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

#include "llmwb/errors.h"

namespace llmwb {

namespace {

constexpr int kQK = 32;   // elements per Q8_0 / Q4_0 block (ggml QK8_0 = QK4_0 = 32)

// Indexed by DType.
constexpr DTypeInfo kInfo[] = {
    {"F32", 1, 4},
    {"F16", 1, 2},
    {"BF16", 1, 2},
    {"Q8_0", kQK, 2 + kQK},       // fp16 d, 32 x int8
    {"Q4_0", kQK, 2 + kQK / 2},   // fp16 d, 16 bytes of nibbles
};
constexpr DType kAll[] = {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0};

// ggml_type ids as listed in ggml.h (gaps are ids ggml retired: 4 Q4_2, 5 Q4_3, and the
// repacked Q4_0_4_4.. variants). Used only to name types in error messages.
const char* ggml_type_name_or_null(uint32_t id) {
  static const char* const kNames[] = {
      "F32",     "F16",     "Q4_0",     "Q4_1",     "Q4_2",     "Q4_3",       "Q5_0",
      "Q5_1",    "Q8_0",    "Q8_1",     "Q2_K",     "Q3_K",     "Q4_K",       "Q5_K",
      "Q6_K",    "Q8_K",    "IQ2_XXS",  "IQ2_XS",   "IQ3_XXS",  "IQ1_S",      "IQ4_NL",
      "IQ3_S",   "IQ2_S",   "IQ4_XS",   "I8",       "I16",      "I32",        "I64",
      "F64",     "IQ1_M",   "BF16",     "Q4_0_4_4", "Q4_0_4_8", "Q4_0_8_8",   "TQ1_0",
      "TQ2_0",   "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4",
  };
  return id < sizeof(kNames) / sizeof(kNames[0]) ? kNames[id] : nullptr;
}

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
void store_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

void check_blocks(DType t, int64_t cols, const char* where) {
  const int be = dtype_info(t).block_elems;
  if (cols < 0 || cols % be != 0) {
    throw Error(where, std::to_string(cols) + " elements is not a multiple of the " +
                           dtype_name(t) + " block size " + std::to_string(be));
  }
}

// ggml quantize_row_q8_0_ref: d = amax / 127, q = round(x / d) (as x * (1/d), like ggml).
void quantize_q8_0(const float* x, uint8_t* dst, int64_t cols) {
  for (int64_t b = 0; b < cols / kQK; ++b, x += kQK, dst += 2 + kQK) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_u16(dst, fp32_to_fp16(d));
    auto* q = reinterpret_cast<int8_t*>(dst + 2);
    for (int j = 0; j < kQK; ++j) q[j] = static_cast<int8_t>(std::round(x[j] * id));
  }
}

// ggml quantize_row_q4_0_ref: the element of largest magnitude, with its sign, maps to -8,
// so d = max / -8 and the full range [-8, 7] is used on the side opposite to that element.
void quantize_q4_0(const float* x, uint8_t* dst, int64_t cols) {
  for (int64_t b = 0; b < cols / kQK; ++b, x += kQK, dst += 2 + kQK / 2) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_u16(dst, fp32_to_fp16(d));
    uint8_t* qs = dst + 2;
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = std::min(15, static_cast<int>(static_cast<int8_t>(x[j] * id + 8.5f)));
      const int q1 =
          std::min(15, static_cast<int>(static_cast<int8_t>(x[j + kQK / 2] * id + 8.5f)));
      qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void dequantize_q8_0(const uint8_t* src, float* y, int64_t cols) {
  for (int64_t b = 0; b < cols / kQK; ++b, src += 2 + kQK, y += kQK) {
    const float d = fp16_to_fp32(load_u16(src));
    const auto* q = reinterpret_cast<const int8_t*>(src + 2);
    for (int j = 0; j < kQK; ++j) y[j] = d * static_cast<float>(q[j]);
  }
}

void dequantize_q4_0(const uint8_t* src, float* y, int64_t cols) {
  for (int64_t b = 0; b < cols / kQK; ++b, src += 2 + kQK / 2, y += kQK) {
    const float d = fp16_to_fp32(load_u16(src));
    const uint8_t* qs = src + 2;
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = d * static_cast<float>((qs[j] & 0x0F) - 8);
      y[j + kQK / 2] = d * static_cast<float>((qs[j] >> 4) - 8);
    }
  }
}

}  // namespace

const DTypeInfo& dtype_info(DType t) {
  const auto i = static_cast<size_t>(t);
  if (i >= sizeof(kInfo) / sizeof(kInfo[0])) {
    throw Error("dtype", "unknown DType value " + std::to_string(i));
  }
  return kInfo[i];
}

const char* dtype_name(DType t) { return dtype_info(t).name; }

bool dtype_from_name(const std::string& name, DType* out) {
  std::string up = name;
  for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (DType t : kAll) {
    if (up == kInfo[static_cast<size_t>(t)].name) {
      *out = t;
      return true;
    }
  }
  return false;
}

bool dtype_from_gguf(uint32_t ggml_type, DType* out) {
  switch (ggml_type) {
    case 0: *out = DType::F32; return true;
    case 1: *out = DType::F16; return true;
    case 2: *out = DType::Q4_0; return true;
    case 8: *out = DType::Q8_0; return true;
    case 30: *out = DType::BF16; return true;
    default: return false;
  }
}

uint32_t dtype_to_gguf(DType t) {
  switch (t) {
    case DType::F32: return 0;
    case DType::F16: return 1;
    case DType::BF16: return 30;
    case DType::Q8_0: return 8;
    case DType::Q4_0: return 2;
  }
  throw Error("dtype", "unknown DType value " + std::to_string(static_cast<int>(t)));
}

std::string gguf_type_name(uint32_t ggml_type) {
  const char* n = ggml_type_name_or_null(ggml_type);
  return n ? std::string(n) : "type " + std::to_string(ggml_type);
}

uint64_t dtype_row_bytes(DType t, int64_t n_elems) {
  const DTypeInfo& info = dtype_info(t);
  check_blocks(t, n_elems, "dtype_row_bytes");
  return static_cast<uint64_t>(n_elems / info.block_elems) * static_cast<uint64_t>(info.block_bytes);
}

// An empty shape describes no tensor (a default TensorView), so it holds no elements.
int64_t TensorView::numel() const {
  if (shape.empty()) return 0;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// IEEE 754 binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F;
  const uint32_t man = h & 0x3FF;
  if (exp == 0x1F) return bits_float(sign | 0x7F800000 | (man << 13));   // inf / nan (payload kept)
  if (exp == 0) {
    // Zero or subnormal: man * 2^-24, exact in float.
    const float v = static_cast<float>(man) * 0x1p-24f;
    return bits_float(sign | float_bits(v));
  }
  return bits_float(sign | ((exp + 127 - 15) << 23) | (man << 13));
}

uint16_t fp32_to_fp16(float f) {
  const uint32_t x = float_bits(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t ax = x & 0x7FFFFFFF;
  if (ax > 0x7F800000) {
    // NaN stays NaN: quiet bit set, top payload bits kept.
    return static_cast<uint16_t>(sign | 0x7E00 | ((ax >> 13) & 0x3FF));
  }
  if (ax >= 0x47800000) return static_cast<uint16_t>(sign | 0x7C00);   // >= 2^16 or inf
  const int e = static_cast<int>(ax >> 23) - 127;
  if (e >= -14) {
    // Normal half. Round to nearest even on the 13 dropped bits; a carry out of the
    // mantissa correctly bumps the exponent (65520 and up become inf).
    const uint32_t m = ax & 0x7FFFFF;
    uint32_t h = (static_cast<uint32_t>(e + 15) << 10) | (m >> 13);
    const uint32_t rem = m & 0x1FFF;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  if (e < -25) return sign;   // below half the smallest subnormal (2^-25): rounds to zero
  // Subnormal half: value / 2^-24, rounded to nearest even. The significand m (24 bits)
  // has value m * 2^(e-23), i.e. m * 2^(e+1) units of 2^-24: shift right by -(e+1).
  const uint32_t m = (ax & 0x7FFFFF) | 0x800000;
  const int shift = -e - 1;   // 14..24
  uint32_t h = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (h & 1))) ++h;   // may become 0x400, the smallest normal
  return static_cast<uint16_t>(sign | h);
}

uint16_t fp32_to_bf16(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>((x >> 16) | 0x0040);   // quiet NaN
  // Round to nearest even: add 0x7FFF plus the lowest kept bit; overflow carries into inf.
  return static_cast<uint16_t>((x + 0x7FFF + ((x >> 16) & 1)) >> 16);
}

void dequantize_row(DType t, const uint8_t* src, float* dst, int64_t cols) {
  check_blocks(t, cols, "dequantize_row");
  switch (t) {
    case DType::F32:
      std::memcpy(dst, src, static_cast<size_t>(cols) * 4);
      return;
    case DType::F16:
      for (int64_t i = 0; i < cols; ++i) dst[i] = fp16_to_fp32(load_u16(src + 2 * i));
      return;
    case DType::BF16:
      for (int64_t i = 0; i < cols; ++i) dst[i] = bf16_to_fp32(load_u16(src + 2 * i));
      return;
    case DType::Q8_0: dequantize_q8_0(src, dst, cols); return;
    case DType::Q4_0: dequantize_q4_0(src, dst, cols); return;
  }
  throw Error("dequantize_row", "unknown DType");
}

void quantize_row(DType t, const float* src, uint8_t* dst, int64_t cols) {
  check_blocks(t, cols, "quantize_row");
  switch (t) {
    case DType::F32:
      std::memcpy(dst, src, static_cast<size_t>(cols) * 4);
      return;
    case DType::F16:
      for (int64_t i = 0; i < cols; ++i) store_u16(dst + 2 * i, fp32_to_fp16(src[i]));
      return;
    case DType::BF16:
      for (int64_t i = 0; i < cols; ++i) store_u16(dst + 2 * i, fp32_to_bf16(src[i]));
      return;
    case DType::Q8_0: quantize_q8_0(src, dst, cols); return;
    case DType::Q4_0: quantize_q4_0(src, dst, cols); return;
  }
  throw Error("quantize_row", "unknown DType");
}

}  // namespace llmwb
