// tensor.cpp — element type tables, IEEE half / bfloat16 conversion, the GGUF block formats
// Q8_0, Q4_0 and Q4_1 (ggml's reference quantizers, so files we write match llama.cpp's), the
// GGUF k-quants Q4_K / Q5_K / Q6_K (ggml's dequantize_row_q*_K; the quantizers are in
// kquants.cpp), and our own
// per-row INT8 and partial-tail INT4 layouts (docs/QUANTIZATION.md).
#include "format/tensor.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

#include "llmwb/errors.h"
#include "format/kquants.h"

namespace llmwb {

namespace {

constexpr int kQK = 32;    // elements per Q8_0 / Q4_0 / Q4_1 block (ggml QK8_0 = QK4_0 = QK4_1 = 32)
constexpr int kQKK = 256;  // elements per k-quant super-block (ggml QK_K)
constexpr int kScalesK = 12;   // ggml K_SCALE_SIZE: 8 six-bit scales and 8 six-bit mins

// Indexed by DType.
constexpr DTypeInfo kInfo[] = {
    {"F32", 1, 4, 0, false},
    {"F16", 1, 2, 0, false},
    {"BF16", 1, 2, 0, false},
    {"Q8_0", kQK, 2 + kQK, 0, false},       // fp16 d, 32 x int8
    {"Q4_0", kQK, 2 + kQK / 2, 0, false},   // fp16 d, 16 bytes of nibbles
    {"Q4_1", kQK, 4 + kQK / 2, 0, false},   // fp16 d, fp16 m, 16 bytes of nibbles
    {"Q4_K", kQKK, 4 + kScalesK + kQKK / 2, 0, false},               // d, dmin, scales, qs
    {"Q5_K", kQKK, 4 + kScalesK + kQKK / 8 + kQKK / 2, 0, false},    // d, dmin, scales, qh, qs
    {"Q6_K", kQKK, kQKK / 2 + kQKK / 4 + kQKK / 16 + 2, 0, false},   // ql, qh, scales, d
    {"INT8_ROW", 1, 1, 4, false},        // f32 scale, then int8 per element
    {"INT8_ASYM_ROW", 1, 1, 8, false},   // f32 scale, int32 zero point, then int8
    {"INT4_G32", 32, 4 + 16, 0, true},
    {"INT4_G128", 128, 4 + 64, 0, true},
};
constexpr DType kAll[] = {DType::F32,  DType::F16,  DType::BF16,     DType::Q8_0,          DType::Q4_0,
                          DType::Q4_1, DType::Q4_K, DType::Q5_K,     DType::Q6_K,          DType::INT8_ROW,
                          DType::INT8_ASYM_ROW,     DType::INT4_G32, DType::INT4_G128};
static_assert(sizeof(kInfo) / sizeof(kInfo[0]) == sizeof(kAll) / sizeof(kAll[0]));

// GGUF type ids of our own types. ggml's ids are dense from 0 (MXFP4 = 39 in 2025); 1024 and
// up leave room for a decade of new ggml types. llama.cpp rejects files that use them.
constexpr uint32_t kGgufInt8Row = 1024, kGgufInt8AsymRow = 1025, kGgufInt4G32 = 1026, kGgufInt4G128 = 1027;

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
  if (!dtype_row_fits(t, cols)) {
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

// ggml quantize_row_q4_1_ref, generalised to groups of `group` elements and a partial last
// group (our INT4_G32 / INT4_G128; with group 32 and whole groups it is exactly Q4_1):
// d = (max - min) / 15, m = min, q = round((x - min) / d) in [0, 15]. A group of n elements
// (n = group except at the end) has h = ceil(n / 2) bytes of nibbles: byte j holds element j
// (low nibble) and element j + h (high nibble; 0 past the end).
void quantize_q4_1_groups(const float* src, uint8_t* out, int64_t cols, int group) {
  const int half = group / 2;
  for (int64_t g0 = 0; g0 < cols; g0 += group) {
    const int n = static_cast<int>(std::min<int64_t>(group, cols - g0));
    const float* x = src + g0;
    uint8_t* dst = out + g0 / group * (4 + half);
    float min = x[0], max = x[0];
    for (int j = 1; j < n; ++j) {
      min = std::min(min, x[j]);
      max = std::max(max, x[j]);
    }
    const float d = (max - min) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_u16(dst, fp32_to_fp16(d));
    store_u16(dst + 2, fp32_to_fp16(min));
    uint8_t* qs = dst + 4;
    auto q_at = [&](int j) {
      if (j >= n) return 0;
      return std::min(15, static_cast<int>(static_cast<int8_t>((x[j] - min) * id + 0.5f)));
    };
    const int h = (n + 1) / 2;
    for (int j = 0; j < h; ++j) qs[j] = static_cast<uint8_t>(q_at(j) | (q_at(j + h) << 4));
  }
}

void dequantize_q4_1_groups(const uint8_t* data, float* out, int64_t cols, int group) {
  const int half = group / 2;
  for (int64_t g0 = 0; g0 < cols; g0 += group) {
    const int n = static_cast<int>(std::min<int64_t>(group, cols - g0));
    const uint8_t* src = data + g0 / group * (4 + half);
    float* y = out + g0;
    const float d = fp16_to_fp32(load_u16(src));
    const float m = fp16_to_fp32(load_u16(src + 2));
    const uint8_t* qs = src + 4;
    const int h = (n + 1) / 2;
    for (int j = 0; j < n; ++j) {
      const int q = j < h ? (qs[j] & 0x0F) : (qs[j - h] >> 4);
      y[j] = d * static_cast<float>(q) + m;
    }
  }
}

// INT8_ROW: symmetric per output channel, s = amax / 127, q = round(x / s) in [-127, 127].
void quantize_int8_row(const float* x, uint8_t* dst, int64_t cols) {
  float amax = 0.0f;
  for (int64_t i = 0; i < cols; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float s = amax / 127.0f;
  const float is = s != 0.0f ? 1.0f / s : 0.0f;
  std::memcpy(dst, &s, 4);
  auto* q = reinterpret_cast<int8_t*>(dst + 4);
  for (int64_t i = 0; i < cols; ++i) {
    q[i] = static_cast<int8_t>(std::clamp(std::nearbyint(x[i] * is), -127.0f, 127.0f));
  }
}

void dequantize_int8_row(const uint8_t* src, float* y, int64_t cols) {
  float s;
  std::memcpy(&s, src, 4);
  const auto* q = reinterpret_cast<const int8_t*>(src + 4);
  for (int64_t i = 0; i < cols; ++i) y[i] = s * static_cast<float>(q[i]);
}

// INT8_ASYM_ROW: the range [min(x, 0), max(x, 0)] maps onto [-128, 127]:
// s = (hi - lo) / 255, z = clip(round(-128 - lo / s), -128, 127), q = clip(round(x / s) + z).
// Keeping 0 inside the range keeps z representable and 0.0 exact (q = z).
void quantize_int8_asym_row(const float* x, uint8_t* dst, int64_t cols) {
  float lo = 0.0f, hi = 0.0f;
  for (int64_t i = 0; i < cols; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  const float s = (hi - lo) / 255.0f;
  const float is = s != 0.0f ? 1.0f / s : 0.0f;
  const int32_t z = s != 0.0f ? static_cast<int32_t>(std::clamp(std::nearbyint(-128.0f - lo * is), -128.0f, 127.0f)) : 0;
  std::memcpy(dst, &s, 4);
  std::memcpy(dst + 4, &z, 4);
  auto* q = reinterpret_cast<int8_t*>(dst + 8);
  for (int64_t i = 0; i < cols; ++i) {
    q[i] = static_cast<int8_t>(std::clamp(std::nearbyint(x[i] * is) + static_cast<float>(z), -128.0f, 127.0f));
  }
}

void dequantize_int8_asym_row(const uint8_t* src, float* y, int64_t cols) {
  float s;
  int32_t z;
  std::memcpy(&s, src, 4);
  std::memcpy(&z, src + 4, 4);
  const auto* q = reinterpret_cast<const int8_t*>(src + 8);
  for (int64_t i = 0; i < cols; ++i) y[i] = s * static_cast<float>(static_cast<int32_t>(q[i]) - z);
}

// Multipliers (d * scale, dmin * min) of sub-blocks `is` and `is + 1` (one 64-element pair).
void sub_block_pair_k4(const uint8_t* scales, int is, float d, float dmin, float* d1, float* m1, float* d2, float* m2) {
  int sc, m;
  k4_scale_min(is, scales, &sc, &m);
  *d1 = d * static_cast<float>(sc);
  *m1 = dmin * static_cast<float>(m);
  k4_scale_min(is + 1, scales, &sc, &m);
  *d2 = d * static_cast<float>(sc);
  *m2 = dmin * static_cast<float>(m);
}

// ggml block_q4_K: fp16 d, fp16 dmin, scales[12], qs[128]. Each 64 elements use two
// sub-blocks of 32: the low nibbles of 32 bytes, then their high nibbles; x = d*sc*q - dmin*m.
void dequantize_q4_k(const uint8_t* src, float* y, int64_t cols) {
  for (int64_t b = 0; b < cols / kQKK; ++b, src += kInfo[static_cast<size_t>(DType::Q4_K)].block_bytes) {
    const float d = fp16_to_fp32(load_u16(src));
    const float dmin = fp16_to_fp32(load_u16(src + 2));
    const uint8_t* scales = src + 4;
    const uint8_t* q = src + 4 + kScalesK;
    for (int j = 0, is = 0; j < kQKK; j += 64, q += 32, is += 2) {
      float d1, m1, d2, m2;
      sub_block_pair_k4(scales, is, d, dmin, &d1, &m1, &d2, &m2);
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0x0F) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

// ggml block_q5_K: fp16 d, fp16 dmin, scales[12], qh[32], qs[128]; as Q4_K with a fifth bit
// per element from qh (bit 2i for the first sub-block of pair i, bit 2i+1 for the second).
void dequantize_q5_k(const uint8_t* src, float* y, int64_t cols) {
  for (int64_t b = 0; b < cols / kQKK; ++b, src += kInfo[static_cast<size_t>(DType::Q5_K)].block_bytes) {
    const float d = fp16_to_fp32(load_u16(src));
    const float dmin = fp16_to_fp32(load_u16(src + 2));
    const uint8_t* scales = src + 4;
    const uint8_t* qh = src + 4 + kScalesK;
    const uint8_t* ql = qh + kQKK / 8;
    uint8_t u1 = 1, u2 = 2;
    for (int j = 0, is = 0; j < kQKK; j += 64, ql += 32, is += 2, u1 = static_cast<uint8_t>(u1 << 2),
             u2 = static_cast<uint8_t>(u2 << 2)) {
      float d1, m1, d2, m2;
      sub_block_pair_k4(scales, is, d, dmin, &d1, &m1, &d2, &m2);
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>((ql[l] & 0x0F) + (qh[l] & u1 ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
    }
  }
}

// ggml block_q6_K: ql[128] (low 4 bits), qh[64] (high 2 bits), int8 scales[16], fp16 d;
// x = d * scale[sub-block of 16] * (q - 32). Each half of 128 elements takes 64 ql bytes and
// 32 qh bytes: elements l, l+32, l+64, l+96 share ql[l], ql[l+32] and the 2-bit fields of qh[l].
void dequantize_q6_k(const uint8_t* src, float* y, int64_t cols) {
  for (int64_t b = 0; b < cols / kQKK; ++b, src += kInfo[static_cast<size_t>(DType::Q6_K)].block_bytes) {
    const uint8_t* ql = src;
    const uint8_t* qh = src + kQKK / 2;
    const auto* sc = reinterpret_cast<const int8_t*>(src + kQKK / 2 + kQKK / 4);
    const float d = fp16_to_fp32(load_u16(src + kQKK / 2 + kQKK / 4 + kQKK / 16));
    for (int n = 0; n < kQKK; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

}  // namespace

// ggml get_scale_min_k4: eight 6-bit scales and eight 6-bit mins packed into 12 bytes.
// Entries 0..3 are the low 6 bits of bytes 0..3 (scales) and 4..7 (mins); entries 4..7 take
// their low 4 bits from bytes 8..11 and their top 2 bits from the spare bits of bytes 0..7.
void k4_scale_min(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

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
    case 3: *out = DType::Q4_1; return true;
    case 8: *out = DType::Q8_0; return true;
    case 12: *out = DType::Q4_K; return true;
    case 13: *out = DType::Q5_K; return true;
    case 14: *out = DType::Q6_K; return true;
    case 30: *out = DType::BF16; return true;
    case kGgufInt8Row: *out = DType::INT8_ROW; return true;
    case kGgufInt8AsymRow: *out = DType::INT8_ASYM_ROW; return true;
    case kGgufInt4G32: *out = DType::INT4_G32; return true;
    case kGgufInt4G128: *out = DType::INT4_G128; return true;
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
    case DType::Q4_1: return 3;
    case DType::Q4_K: return 12;
    case DType::Q5_K: return 13;
    case DType::Q6_K: return 14;
    case DType::INT8_ROW: return kGgufInt8Row;
    case DType::INT8_ASYM_ROW: return kGgufInt8AsymRow;
    case DType::INT4_G32: return kGgufInt4G32;
    case DType::INT4_G128: return kGgufInt4G128;
  }
  throw Error("dtype", "unknown DType value " + std::to_string(static_cast<int>(t)));
}

std::string gguf_type_name(uint32_t ggml_type) {
  DType own;
  if (ggml_type >= kGgufInt8Row && dtype_from_gguf(ggml_type, &own)) return dtype_name(own);
  const char* n = ggml_type_name_or_null(ggml_type);
  return n ? std::string(n) : "type " + std::to_string(ggml_type);
}

uint64_t dtype_row_bytes(DType t, int64_t n_elems) {
  const DTypeInfo& info = dtype_info(t);
  check_blocks(t, n_elems, "dtype_row_bytes");
  const int64_t blocks = n_elems / info.block_elems, rem = n_elems % info.block_elems;
  const uint64_t tail = rem ? static_cast<uint64_t>(4 + (rem + 1) / 2) : 0;   // partial INT4 group
  return static_cast<uint64_t>(info.row_header_bytes) +
         static_cast<uint64_t>(blocks) * static_cast<uint64_t>(info.block_bytes) + tail;
}

bool dtype_row_fits(DType t, int64_t n_elems) {
  const DTypeInfo& info = dtype_info(t);
  return n_elems >= 0 && (info.partial_tail || n_elems % info.block_elems == 0);
}

bool dtype_can_quantize(DType) { return true; }

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
    case DType::Q4_1: dequantize_q4_1_groups(src, dst, cols, kQK); return;
    case DType::Q4_K: dequantize_q4_k(src, dst, cols); return;
    case DType::Q5_K: dequantize_q5_k(src, dst, cols); return;
    case DType::Q6_K: dequantize_q6_k(src, dst, cols); return;
    case DType::INT8_ROW: dequantize_int8_row(src, dst, cols); return;
    case DType::INT8_ASYM_ROW: dequantize_int8_asym_row(src, dst, cols); return;
    case DType::INT4_G32: dequantize_q4_1_groups(src, dst, cols, 32); return;
    case DType::INT4_G128: dequantize_q4_1_groups(src, dst, cols, 128); return;
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
    case DType::Q4_1: quantize_q4_1_groups(src, dst, cols, kQK); return;
    case DType::INT8_ROW: quantize_int8_row(src, dst, cols); return;
    case DType::INT8_ASYM_ROW: quantize_int8_asym_row(src, dst, cols); return;
    case DType::INT4_G32: quantize_q4_1_groups(src, dst, cols, 32); return;
    case DType::INT4_G128: quantize_q4_1_groups(src, dst, cols, 128); return;
    case DType::Q4_K: quantize_row_q4_k(src, dst, cols); return;
    case DType::Q5_K: quantize_row_q5_k(src, dst, cols); return;
    case DType::Q6_K: quantize_row_q6_k(src, dst, cols); return;
  }
  throw Error("quantize_row", "unknown DType");
}

}  // namespace llmwb
