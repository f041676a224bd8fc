// test_dtype.cpp — IEEE half / bfloat16 conversion and the GGUF Q8_0 / Q4_0 block formats.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "llmwb/errors.h"
#include "format/tensor.h"

namespace llmwb {
namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
bool half_is_nan(uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0; }

// The correctly rounded half of f, found by search: the nearest finite half, ties to the even
// mantissa; beyond the largest half + half an ulp (65520), infinity. An oracle independent of
// the bit manipulation under test.
uint16_t nearest_half(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(f));
  if (a >= 65520.0) return sign | 0x7C00;
  // Finite halves grow with their bit pattern: binary search for the first one >= a.
  int lo = 0, hi = 0x7BFF;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (fp16_to_fp32(static_cast<uint16_t>(mid)) < a) lo = mid + 1; else hi = mid;
  }
  const double above = fp16_to_fp32(static_cast<uint16_t>(lo));
  if (lo == 0 || above < a) return static_cast<uint16_t>(sign | lo);   // a == 0, or in (65504, 65520)
  const double below = fp16_to_fp32(static_cast<uint16_t>(lo - 1));
  const double e_above = above - a, e_below = a - below;
  if (e_below < e_above) return static_cast<uint16_t>(sign | (lo - 1));
  if (e_above < e_below) return static_cast<uint16_t>(sign | lo);
  return static_cast<uint16_t>(sign | ((lo & 1) ? lo - 1 : lo));   // tie: the even mantissa
}

TEST(Dtype, EveryHalfSurvivesTheRoundTripThroughFloat) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_fp32(static_cast<uint16_t>(h));
    const uint16_t back = fp32_to_fp16(f);
    if (half_is_nan(static_cast<uint16_t>(h))) {
      EXPECT_TRUE(std::isnan(f)) << std::hex << h;
      EXPECT_TRUE(half_is_nan(back)) << std::hex << h;
    } else {
      ASSERT_EQ(back, h) << std::hex << h << " -> " << f;
    }
  }
}

TEST(Dtype, HalfDecodesSpecialValues) {
  EXPECT_EQ(fp16_to_fp32(0x3C00), 1.0f);
  EXPECT_EQ(fp16_to_fp32(0xC000), -2.0f);
  EXPECT_EQ(fp16_to_fp32(0x7BFF), 65504.0f);
  EXPECT_EQ(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));   // smallest subnormal
  EXPECT_EQ(fp16_to_fp32(0x03FF), std::ldexp(1023.0f, -24));   // largest subnormal
  EXPECT_EQ(fp16_to_fp32(0x0400), std::ldexp(1.0f, -14));   // smallest normal
  EXPECT_EQ(bits(fp16_to_fp32(0x8000)), 0x80000000u);   // -0 keeps its sign
  EXPECT_EQ(fp16_to_fp32(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(fp16_to_fp32(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7E00)));
}

TEST(Dtype, HalfEncodingRoundsToNearestEven) {
  // 1 + 2^-11 lies exactly between 1 and 1 + 2^-10: ties go to the even mantissa (1.0).
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  // 1 + 3 * 2^-11 lies between 1 + 2^-10 (odd) and 1 + 2^-9 (even).
  EXPECT_EQ(fp32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  // Just above the tie rounds up.
  EXPECT_EQ(fp32_to_fp16(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)), 0x3C01);
  // Overflow: 65504 is the largest half; from 65520 (half an ulp above) on it is infinity.
  EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7BFF);
  EXPECT_EQ(fp32_to_fp16(65519.99f), 0x7BFF);
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7C00);
  EXPECT_EQ(fp32_to_fp16(-1e10f), 0xFC00);
  EXPECT_EQ(fp32_to_fp16(std::numeric_limits<float>::infinity()), 0x7C00);
  // Subnormals: 2^-25 is the tie between 0 and the smallest subnormal: even is 0.
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(3.0f, -25)), 0x0002);   // 1.5 units: tie, to even 2
  EXPECT_EQ(fp32_to_fp16(-std::ldexp(1.0f, -30)), 0x8000);
  // The largest subnormal plus more than half a unit becomes the smallest normal.
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1023.75f, -24)), 0x0400);
  // NaN stays NaN (not infinity), whatever its payload.
  EXPECT_TRUE(half_is_nan(fp32_to_fp16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(half_is_nan(fp32_to_fp16(from_bits(0x7F800001))));
  EXPECT_TRUE(half_is_nan(fp32_to_fp16(from_bits(0xFF800100))));
}

TEST(Dtype, HalfEncodingMatchesTheNearestHalfOnRandomFloats) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> expo(-28, 17);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  for (int i = 0; i < 200000; ++i) {
    float f = std::ldexp(mant(rng), expo(rng));
    if (i & 1) f = -f;
    ASSERT_EQ(fp32_to_fp16(f), nearest_half(f)) << f;
  }
}

TEST(Dtype, EveryBfloat16SurvivesTheRoundTripThroughFloat) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = bf16_to_fp32(static_cast<uint16_t>(b));
    const uint16_t back = fp32_to_bf16(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(bf16_to_fp32(back))) << std::hex << b;
    } else {
      ASSERT_EQ(back, b) << std::hex << b;
    }
  }
}

TEST(Dtype, Bfloat16EncodingRoundsToNearestEven) {
  // bfloat16 keeps 7 mantissa bits: 1 + 2^-8 is the tie between 1 and 1 + 2^-7.
  EXPECT_EQ(fp32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  EXPECT_EQ(fp32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_EQ(fp32_to_bf16(std::nextafter(1.0f + std::ldexp(1.0f, -8), 2.0f)), 0x3F81);
  EXPECT_EQ(fp32_to_bf16(-2.0f), 0xC000);
  // The largest float rounds up to infinity; a NaN whose payload sits only in the low bits
  // must not be truncated into infinity.
  EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_TRUE(std::isnan(bf16_to_fp32(fp32_to_bf16(from_bits(0x7F800001)))));
  EXPECT_EQ(fp32_to_bf16(std::ldexp(1.0f, -130)), 0x0008);   // subnormals are ordinary here
}

TEST(Dtype, NamesAndGgufIdsRoundTrip) {
  const DType all[] = {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0};
  for (DType t : all) {
    DType parsed;
    ASSERT_TRUE(dtype_from_name(dtype_name(t), &parsed));
    EXPECT_EQ(parsed, t);
    ASSERT_TRUE(dtype_from_gguf(dtype_to_gguf(t), &parsed));
    EXPECT_EQ(parsed, t);
    EXPECT_EQ(gguf_type_name(dtype_to_gguf(t)), dtype_name(t));
  }
  DType t;
  EXPECT_TRUE(dtype_from_name("q4_0", &t));
  EXPECT_EQ(t, DType::Q4_0);
  EXPECT_TRUE(dtype_from_name("bf16", &t));
  EXPECT_EQ(t, DType::BF16);
  EXPECT_FALSE(dtype_from_name("iq2_xxs", &t));
  EXPECT_EQ(dtype_to_gguf(DType::F16), 1u);
  EXPECT_EQ(dtype_to_gguf(DType::Q4_0), 2u);
  EXPECT_EQ(dtype_to_gguf(DType::Q8_0), 8u);
  EXPECT_EQ(dtype_to_gguf(DType::BF16), 30u);
}

TEST(Dtype, UnsupportedGgufTypesAreNamedForErrorMessages) {
  DType t;
  EXPECT_FALSE(dtype_from_gguf(16, &t));   // IQ2_XXS
  EXPECT_EQ(gguf_type_name(3), "Q4_1");
  EXPECT_EQ(gguf_type_name(10), "Q2_K");
  EXPECT_EQ(gguf_type_name(12), "Q4_K");
  EXPECT_EQ(gguf_type_name(14), "Q6_K");
  EXPECT_EQ(gguf_type_name(15), "Q8_K");
  EXPECT_EQ(gguf_type_name(28), "F64");
  EXPECT_EQ(gguf_type_name(999), "type 999");
}

TEST(Dtype, RowBytesFollowTheBlockLayouts) {
  EXPECT_EQ(dtype_row_bytes(DType::F32, 7), 28u);
  EXPECT_EQ(dtype_row_bytes(DType::F16, 7), 14u);
  EXPECT_EQ(dtype_row_bytes(DType::BF16, 64), 128u);
  EXPECT_EQ(dtype_row_bytes(DType::Q8_0, 64), 2u * 34);
  EXPECT_EQ(dtype_row_bytes(DType::Q4_0, 96), 3u * 18);
  EXPECT_THROW(dtype_row_bytes(DType::Q8_0, 40), Error);
  EXPECT_THROW(dtype_row_bytes(DType::Q4_0, 31), Error);
}

TEST(Dtype, TensorViewAddressesRowsOfBlocks) {
  std::vector<uint8_t> buf(3 * 2 * 34);
  TensorView v;
  v.dtype = DType::Q8_0;
  v.shape = {3, 64};
  v.data = buf.data();
  v.nbytes = buf.size();
  EXPECT_EQ(v.numel(), 192);
  EXPECT_EQ(v.rows(), 3);
  EXPECT_EQ(v.cols(), 64);
  EXPECT_EQ(v.row(2), buf.data() + 2 * 68);
  EXPECT_EQ(TensorView{}.numel(), 0);
}

float load_half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return fp16_to_fp32(h);
}

TEST(Dtype, Q8_0UsesAbsMaxOver127AndRoundsToNearest) {
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = 0.37f * static_cast<float>(j - 13) + (j == 31 ? -20.0f : 0.0f);
  uint8_t blk[34];
  quantize_row(DType::Q8_0, x, blk, 32);
  float amax = 0;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  const float d = amax / 127.0f;
  EXPECT_EQ(load_half(blk), fp16_to_fp32(fp32_to_fp16(d)));
  const auto* q = reinterpret_cast<const int8_t*>(blk + 2);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(q[j], static_cast<int8_t>(std::lround(x[j] * (1.0f / d)))) << j;
  EXPECT_EQ(q[31], -127);   // the extreme element uses the full range
  float back[32];
  dequantize_row(DType::Q8_0, blk, back, 32);
  const float dh = load_half(blk);
  for (int j = 0; j < 32; ++j) EXPECT_FLOAT_EQ(back[j], dh * q[j]);
}

TEST(Dtype, Q4_0MapsTheLargestMagnitudeToMinus8AndPacksNibbles) {
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = 0.1f * static_cast<float>(j) - 1.0f;
  x[20] = 3.2f;   // largest magnitude, positive: d = 3.2 / -8 < 0
  uint8_t blk[18];
  quantize_row(DType::Q4_0, x, blk, 32);
  const float d = 3.2f / -8.0f;
  EXPECT_EQ(load_half(blk), fp16_to_fp32(fp32_to_fp16(d)));
  for (int j = 0; j < 32; ++j) {
    const int nib = j < 16 ? (blk[2 + j] & 0x0F) : (blk[2 + j - 16] >> 4);
    const int expect = std::min(15, static_cast<int>(static_cast<int8_t>(x[j] * (1.0f / d) + 8.5f)));
    EXPECT_EQ(nib, expect) << j;
  }
  EXPECT_EQ(blk[2 + 4] >> 4, 0);   // element 20 -> -8
  float back[32];
  dequantize_row(DType::Q4_0, blk, back, 32);
  const float dh = load_half(blk);
  for (int j = 0; j < 32; ++j) {
    const int nib = j < 16 ? (blk[2 + j] & 0x0F) : (blk[2 + j - 16] >> 4);
    EXPECT_FLOAT_EQ(back[j], dh * static_cast<float>(nib - 8));
    EXPECT_LE(std::fabs(back[j] - x[j]), std::fabs(dh) * 1.01f) << j;   // at most one step off
  }
}

TEST(Dtype, QuantizedRowsReconstructWithinHalfAStep) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<float> x(32 * 40), back(x.size());
  for (float& v : x) v = nd(rng);
  for (DType t : {DType::Q8_0, DType::Q4_0, DType::F16, DType::BF16, DType::F32}) {
    std::vector<uint8_t> q(dtype_row_bytes(t, static_cast<int64_t>(x.size())));
    quantize_row(t, x.data(), q.data(), static_cast<int64_t>(x.size()));
    dequantize_row(t, q.data(), back.data(), static_cast<int64_t>(x.size()));
    for (size_t b = 0; b < x.size() / 32; ++b) {
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
      // Half a quantization step, plus the fp16 rounding of the scale.
      const float step = t == DType::Q8_0 ? amax / 127 : t == DType::Q4_0 ? amax / 8 : 0.0f;
      const float rel = t == DType::F16 ? 1.0f / 2048 : t == DType::BF16 ? 1.0f / 256 : 0.0f;
      for (int j = 0; j < 32; ++j) {
        const float v = x[b * 32 + j];
        // Q4_0 clamps the top code (+8 becomes +7): one full step on the side opposite the
        // max. The scale itself is stored as fp16 (relative error 2^-11), which moves every
        // reconstructed value by up to amax * 2^-11.
        const float scale_err = t == DType::Q8_0 || t == DType::Q4_0 ? amax / 2048 : 0.0f;
        const float bound =
            (t == DType::Q4_0 ? step : 0.5f * step) * 1.001f + scale_err * 1.01f + rel * std::fabs(v) + 1e-6f;
        ASSERT_LE(std::fabs(back[b * 32 + j] - v), bound) << dtype_name(t) << " element " << b * 32 + j;
      }
    }
  }
}

TEST(Dtype, AllZeroBlocksQuantizeToZero) {
  float x[64] = {};
  uint8_t q8[68], q4[36];
  float back[64];
  quantize_row(DType::Q8_0, x, q8, 64);
  dequantize_row(DType::Q8_0, q8, back, 64);
  for (float v : back) EXPECT_EQ(v, 0.0f);
  quantize_row(DType::Q4_0, x, q4, 64);
  dequantize_row(DType::Q4_0, q4, back, 64);
  for (float v : back) EXPECT_EQ(v, 0.0f);
}

TEST(Dtype, PartialBlocksAreRejected) {
  float x[40] = {};
  uint8_t out[128];
  EXPECT_THROW(quantize_row(DType::Q8_0, x, out, 40), Error);
  EXPECT_THROW(dequantize_row(DType::Q4_0, out, x, 20), Error);
}

}  // namespace
}  // namespace llmwb
