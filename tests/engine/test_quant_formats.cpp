// Quantized element types: byte layouts against the GGUF spec on hand-made blocks, the
// k-quant decoders against blocks packed from the spec, round-trip error bounds, zero points
// and clipping, odd row lengths and partial groups, and the per-tensor error statistics.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "llmwb/errors.h"
#include "format/tensor.h"
#include "quant/tensor_error.h"

using namespace llmwb;

namespace {

std::vector<float> random_row(int64_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

std::vector<uint8_t> quantize(DType t, const std::vector<float>& x) {
  std::vector<uint8_t> q(dtype_row_bytes(t, static_cast<int64_t>(x.size())));
  quantize_row(t, x.data(), q.data(), static_cast<int64_t>(x.size()));
  return q;
}

std::vector<float> dequantize(DType t, const std::vector<uint8_t>& q, int64_t n) {
  std::vector<float> y(static_cast<size_t>(n));
  dequantize_row(t, q.data(), y.data(), n);
  return y;
}

uint16_t u16_at(const std::vector<uint8_t>& b, size_t off) { return static_cast<uint16_t>(b[off] | (b[off + 1] << 8)); }

// ---------------------------------------------------------------------------- GGUF byte layouts

TEST(QuantFormats, Q8_0BlockIsByteIdenticalToTheGgufLayout) {
  // d = 0.5 is exact in fp16 (0x3800); values q * 0.5 with q = -127 (the largest magnitude) .. 31.
  std::vector<float> x(32);
  std::vector<uint8_t> want = {0x00, 0x38};
  for (int j = 0; j < 32; ++j) {
    const int q = j == 0 ? -127 : j - 1;
    x[static_cast<size_t>(j)] = 0.5f * static_cast<float>(q);
    want.push_back(static_cast<uint8_t>(static_cast<int8_t>(q)));
  }
  EXPECT_EQ(quantize(DType::Q8_0, x), want);
  EXPECT_EQ(dequantize(DType::Q8_0, want, 32), x);
}

TEST(QuantFormats, Q4_0BlockIsByteIdenticalToTheGgufLayout) {
  // The element of largest magnitude is -2.0, so d = -2 / -8 = 0.25 (fp16 0x3400) and
  // x = 0.25 * (q - 8). Byte j holds element j in its low nibble and element j + 16 in its high one.
  std::vector<int> q(32);
  for (int j = 0; j < 32; ++j) q[static_cast<size_t>(j)] = j == 5 ? 0 : (j * 7 + 3) % 15 + 1;
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[static_cast<size_t>(j)] = 0.25f * static_cast<float>(q[static_cast<size_t>(j)] - 8);
  std::vector<uint8_t> want = {0x00, 0x34};
  for (int j = 0; j < 16; ++j) want.push_back(static_cast<uint8_t>(q[static_cast<size_t>(j)] | (q[static_cast<size_t>(j + 16)] << 4)));
  EXPECT_EQ(quantize(DType::Q4_0, x), want);
  EXPECT_EQ(dequantize(DType::Q4_0, want, 32), x);
}

TEST(QuantFormats, Q4_1BlockIsByteIdenticalToTheGgufLayout) {
  // min -1 (fp16 0xBC00), max 2.75: d = 3.75 / 15 = 0.25 (0x3400); x = 0.25 * q - 1.
  std::vector<int> q(32);
  for (int j = 0; j < 32; ++j) q[static_cast<size_t>(j)] = (j * 11 + 4) % 16;
  q[3] = 0;
  q[20] = 15;
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[static_cast<size_t>(j)] = 0.25f * static_cast<float>(q[static_cast<size_t>(j)]) - 1.0f;
  std::vector<uint8_t> want = {0x00, 0x34, 0x00, 0xBC};
  for (int j = 0; j < 16; ++j) want.push_back(static_cast<uint8_t>(q[static_cast<size_t>(j)] | (q[static_cast<size_t>(j + 16)] << 4)));
  EXPECT_EQ(quantize(DType::Q4_1, x), want);
  EXPECT_EQ(dequantize(DType::Q4_1, want, 32), x);
}

TEST(QuantFormats, GgufTypeIdsFollowGgmlAndOurOwnIdsCannotCollide) {
  EXPECT_EQ(dtype_to_gguf(DType::Q4_1), 3u);
  EXPECT_EQ(dtype_to_gguf(DType::Q4_K), 12u);
  EXPECT_EQ(dtype_to_gguf(DType::Q5_K), 13u);
  EXPECT_EQ(dtype_to_gguf(DType::Q6_K), 14u);
  for (DType t : {DType::INT8_ROW, DType::INT8_ASYM_ROW, DType::INT4_G32, DType::INT4_G128}) {
    EXPECT_GE(dtype_to_gguf(t), 1024u) << dtype_name(t);
    EXPECT_EQ(gguf_type_name(dtype_to_gguf(t)), dtype_name(t));
  }
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q4_K, DType::Q5_K,
                  DType::Q6_K, DType::INT8_ROW, DType::INT8_ASYM_ROW, DType::INT4_G32, DType::INT4_G128}) {
    DType back;
    ASSERT_TRUE(dtype_from_gguf(dtype_to_gguf(t), &back)) << dtype_name(t);
    EXPECT_EQ(back, t);
    ASSERT_TRUE(dtype_from_name(dtype_name(t), &back));
    EXPECT_EQ(back, t);
  }
  // ggml's block sizes in bytes (ggml-common.h): 144, 176, 210 per 256 elements.
  EXPECT_EQ(dtype_row_bytes(DType::Q4_K, 512), 288u);
  EXPECT_EQ(dtype_row_bytes(DType::Q5_K, 256), 176u);
  EXPECT_EQ(dtype_row_bytes(DType::Q6_K, 256), 210u);
  EXPECT_EQ(dtype_row_bytes(DType::Q4_1, 64), 40u);
}

// ---------------------------------------------------------------------------- k-quants

// Packs eight 6-bit scales and mins the way ggml's get_scale_min_k4 unpacks them.
void pack_scales_k4(const int sc[8], const int mn[8], uint8_t* s) {
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    s[j + 4] = static_cast<uint8_t>((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
    s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0x0F) | ((mn[j + 4] & 0x0F) << 4));
  }
}

TEST(QuantFormats, Q4_KDecodesABlockPackedFromTheGgmlLayout) {
  // block_q4_K: fp16 d, fp16 dmin, scales[12], qs[128]; element e is in sub-block e / 32 and in
  // byte 32 * (e / 64) + e % 32, low nibble for the first 32 of each 64, high for the second.
  const int sc[8] = {1, 5, 17, 63, 40, 2, 33, 9}, mn[8] = {0, 63, 7, 20, 48, 31, 1, 16};
  std::vector<uint8_t> b(144, 0);
  b[0] = 0x00, b[1] = 0x38;   // d = 0.5
  b[2] = 0x00, b[3] = 0x34;   // dmin = 0.25
  pack_scales_k4(sc, mn, b.data() + 4);
  std::vector<int> q(256);
  for (int e = 0; e < 256; ++e) {
    q[static_cast<size_t>(e)] = (e * 7 + e / 16) % 16;
    uint8_t& byte = b[static_cast<size_t>(16 + 32 * (e / 64) + e % 32)];
    byte = static_cast<uint8_t>(byte | (e % 64 < 32 ? q[static_cast<size_t>(e)] : q[static_cast<size_t>(e)] << 4));
  }
  const std::vector<float> y = dequantize(DType::Q4_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const float want = 0.5f * static_cast<float>(sc[e / 32] * q[static_cast<size_t>(e)]) - 0.25f * static_cast<float>(mn[e / 32]);
    ASSERT_FLOAT_EQ(y[static_cast<size_t>(e)], want) << "element " << e;
  }
}

TEST(QuantFormats, Q5_KDecodesABlockPackedFromTheGgmlLayout) {
  // block_q5_K: fp16 d, fp16 dmin, scales[12], qh[32], qs[128]; the fifth bit of element e is bit
  // e / 32 of qh[e % 32].
  const int sc[8] = {3, 60, 1, 22, 47, 8, 15, 63}, mn[8] = {5, 0, 63, 12, 30, 44, 2, 19};
  std::vector<uint8_t> b(176, 0);
  b[0] = 0x00, b[1] = 0x3C;   // d = 1
  b[2] = 0x00, b[3] = 0x38;   // dmin = 0.5
  pack_scales_k4(sc, mn, b.data() + 4);
  std::vector<int> q(256);
  for (int e = 0; e < 256; ++e) {
    const int v = (e * 13 + 5) % 32;
    q[static_cast<size_t>(e)] = v;
    uint8_t& lo = b[static_cast<size_t>(48 + 32 * (e / 64) + e % 32)];
    lo = static_cast<uint8_t>(lo | (e % 64 < 32 ? (v & 0x0F) : (v & 0x0F) << 4));
    if (v & 16) b[static_cast<size_t>(16 + e % 32)] |= static_cast<uint8_t>(1 << (e / 32));
  }
  const std::vector<float> y = dequantize(DType::Q5_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const float want = static_cast<float>(sc[e / 32] * q[static_cast<size_t>(e)]) - 0.5f * static_cast<float>(mn[e / 32]);
    ASSERT_FLOAT_EQ(y[static_cast<size_t>(e)], want) << "element " << e;
  }
}

TEST(QuantFormats, Q6_KDecodesABlockPackedFromTheGgmlLayout) {
  // block_q6_K: ql[128], qh[64], int8 scales[16], fp16 d; x = d * scales[e / 16] * (q - 32).
  // In each half of 128 elements (offset h), element l + 32 k (l < 32) keeps its low 4 bits in
  // ql[64 h' + l + 32 (k & 1)] (low nibble for k < 2, high for k >= 2) and its top 2 bits in
  // bits 2k..2k+1 of qh[32 h' + l].
  std::vector<uint8_t> b(210, 0);
  int8_t scales[16];
  for (int i = 0; i < 16; ++i) scales[i] = static_cast<int8_t>(i * 17 % 50 - 25);
  std::memcpy(b.data() + 192, scales, 16);
  b[208] = 0x00, b[209] = 0x34;   // d = 0.25
  std::vector<int> q(256);
  for (int e = 0; e < 256; ++e) {
    const int v = (e * 29 + 7) % 64;
    q[static_cast<size_t>(e)] = v;
    const int half = e / 128, l = e % 32, k = (e % 128) / 32;
    uint8_t& lo = b[static_cast<size_t>(64 * half + l + 32 * (k & 1))];
    lo = static_cast<uint8_t>(lo | (k < 2 ? (v & 0x0F) : (v & 0x0F) << 4));
    b[static_cast<size_t>(128 + 32 * half + l)] |= static_cast<uint8_t>((v >> 4) << (2 * k));
  }
  const std::vector<float> y = dequantize(DType::Q6_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const float want = 0.25f * static_cast<float>(scales[e / 16]) * static_cast<float>(q[static_cast<size_t>(e)] - 32);
    ASSERT_FLOAT_EQ(y[static_cast<size_t>(e)], want) << "element " << e;
  }
}

TEST(QuantFormats, KQuantsNeedWholeSuperBlocks) {
  std::vector<float> x(256, 1.0f);
  for (DType t : {DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    EXPECT_TRUE(dtype_can_quantize(t));
    EXPECT_FALSE(dtype_row_fits(t, 255));
    EXPECT_FALSE(dtype_row_fits(t, 64));
    std::vector<uint8_t> out(dtype_row_bytes(t, 256));
    EXPECT_THROW(quantize_row(t, x.data(), out.data(), 64), Error);
  }
}

// ---------------------------------------------------------------------------- round trips

// |x - dequant(quant(x))| <= scale / 2 inside the clip range, with the scale read back from the
// row as stored. Block types keep d (and m) in fp16: d is rounded after q was chosen with the
// exact d, which adds at most qmax * |d - fp16(d)| <= qmax * d * 2^-11, and m's rounding adds
// |m| * 2^-11.
TEST(QuantRoundTrip, Int8RowErrorIsAtMostHalfAScale) {
  for (int64_t n : {1, 7, 64, 173}) {
    const auto x = random_row(n, static_cast<uint32_t>(n), 0.3f);
    const auto q = quantize(DType::INT8_ROW, x);
    ASSERT_EQ(q.size(), static_cast<size_t>(4 + n));
    float s;
    std::memcpy(&s, q.data(), 4);
    const auto y = dequantize(DType::INT8_ROW, q, n);
    for (size_t i = 0; i < x.size(); ++i) ASSERT_LE(std::fabs(x[i] - y[i]), s / 2 * (1 + 1e-5f)) << "n " << n << " i " << i;
  }
}

TEST(QuantRoundTrip, Int8AsymErrorIsAtMostHalfAScale) {
  for (int64_t n : {1, 9, 128, 301}) {
    auto x = random_row(n, static_cast<uint32_t>(n + 100), 0.5f);
    for (float& v : x) v += 0.4f;   // skewed, where a zero point helps
    const auto q = quantize(DType::INT8_ASYM_ROW, x);
    ASSERT_EQ(q.size(), static_cast<size_t>(8 + n));
    float s;
    std::memcpy(&s, q.data(), 4);
    const auto y = dequantize(DType::INT8_ASYM_ROW, q, n);
    for (size_t i = 0; i < x.size(); ++i) ASSERT_LE(std::fabs(x[i] - y[i]), s / 2 * (1 + 1e-5f)) << "n " << n << " i " << i;
  }
}

TEST(QuantRoundTrip, BlockTypesStayWithinHalfAScalePlusFp16Rounding) {
  struct Case {
    DType t;
    int group, header, qmax;
    bool has_min;
  };
  for (const Case& c : {Case{DType::Q8_0, 32, 2, 127, false}, Case{DType::Q4_0, 32, 2, 8, false},
                        Case{DType::Q4_1, 32, 4, 15, true}, Case{DType::INT4_G32, 32, 4, 15, true},
                        Case{DType::INT4_G128, 128, 4, 15, true}}) {
    const int64_t n = 512;
    const auto x = random_row(n, 42, 0.7f);
    const auto q = quantize(c.t, x);
    const auto y = dequantize(c.t, q, n);
    const size_t block_bytes = static_cast<size_t>(dtype_info(c.t).block_bytes);
    for (int64_t i = 0; i < n; ++i) {
      const size_t b = static_cast<size_t>(i / c.group) * block_bytes;
      const float d = std::fabs(fp16_to_fp32(u16_at(q, b)));
      const float m = c.has_min ? std::fabs(fp16_to_fp32(u16_at(q, b + 2))) : 0.0f;
      // Q4_0 maps the largest magnitude to -8 and clips +8 to 7: its far side loses up to one d.
      const float half = c.t == DType::Q4_0 ? d : d / 2;
      const float bound = half + static_cast<float>(c.qmax) * d * 0x1p-11f + m * 0x1p-11f + 1e-7f;
      ASSERT_LE(std::fabs(x[static_cast<size_t>(i)] - y[static_cast<size_t>(i)]), bound) << dtype_name(c.t) << " element " << i;
    }
    (void)c.header;
  }
}

TEST(QuantRoundTrip, PartialLastGroupsRoundTripInTheirOwnBytes) {
  for (DType t : {DType::INT4_G32, DType::INT4_G128}) {
    const int g = dtype_info(t).block_elems;
    for (int64_t n : {int64_t{5}, int64_t{g + 1}, int64_t{172}, int64_t{3 * g - 1}}) {
      ASSERT_TRUE(dtype_row_fits(t, n));
      // Whole groups take 4 + g/2 bytes, the last (partial) one 4 + ceil(r/2).
      const int64_t r = n % g;
      EXPECT_EQ(dtype_row_bytes(t, n), static_cast<uint64_t>(n / g * (4 + g / 2) + (r ? 4 + (r + 1) / 2 : 0)));
      const auto x = random_row(n, static_cast<uint32_t>(n * 3), 1.0f);
      const auto q = quantize(t, x);
      const auto y = dequantize(t, q, n);
      // The tail group's scale comes from its own elements only.
      const size_t last = static_cast<size_t>((n - 1) / g) * static_cast<size_t>(4 + g / 2);
      float lo = x[static_cast<size_t>((n - 1) / g * g)], hi = lo;
      for (int64_t i = (n - 1) / g * g; i < n; ++i) {
        lo = std::min(lo, x[static_cast<size_t>(i)]);
        hi = std::max(hi, x[static_cast<size_t>(i)]);
      }
      EXPECT_NEAR(fp16_to_fp32(u16_at(q, last)), (hi - lo) / 15, (hi - lo) / 15 * 1e-3 + 1e-7) << dtype_name(t) << " n " << n;
      EXPECT_NEAR(fp16_to_fp32(u16_at(q, last + 2)), lo, std::fabs(lo) * 1e-3);
      for (int64_t i = 0; i < n; ++i) {
        const float d = fp16_to_fp32(u16_at(q, static_cast<size_t>(i / g) * static_cast<size_t>(4 + g / 2)));
        ASSERT_LE(std::fabs(x[static_cast<size_t>(i)] - y[static_cast<size_t>(i)]), d / 2 + 16 * d * 0x1p-11f + 4 * 0x1p-11f)
            << dtype_name(t) << " n " << n << " i " << i;
      }
    }
  }
  // GGUF block types cannot hold a partial block.
  EXPECT_FALSE(dtype_row_fits(DType::Q4_1, 172));
  EXPECT_FALSE(dtype_row_fits(DType::Q8_0, 33));
  EXPECT_THROW(dtype_row_bytes(DType::Q4_0, 33), Error);
}

// ---------------------------------------------------------------------------- zero points, clipping

TEST(QuantZeroPoint, ZeroIsExactAndTheRangeEndsMapToTheInt8Limits) {
  // Mixed signs: min and max land on -128 and 127 (within the one step the integer zero point
  // can shift them), and 0.0 decodes to exactly 0.
  std::vector<float> x = {-0.9f, 0.0f, 0.35f, 2.1f, -0.2f};
  auto q = quantize(DType::INT8_ASYM_ROW, x);
  float s;
  int32_t z;
  std::memcpy(&s, q.data(), 4);
  std::memcpy(&z, q.data() + 4, 4);
  EXPECT_FLOAT_EQ(s, 3.0f / 255.0f);
  EXPECT_EQ(z, static_cast<int32_t>(std::nearbyint(-128.0f + 0.9f / s)));
  const auto* qi = reinterpret_cast<const int8_t*>(q.data() + 8);
  EXPECT_LE(qi[0], -127);
  EXPECT_GE(qi[3], 126);
  EXPECT_EQ(qi[1], z);
  EXPECT_EQ(dequantize(DType::INT8_ASYM_ROW, q, 5)[1], 0.0f);

  // All positive: the range is stretched to include 0, so z sits at -128 and 0 stays exact.
  x = {0.5f, 1.0f, 2.0f};
  q = quantize(DType::INT8_ASYM_ROW, x);
  std::memcpy(&z, q.data() + 4, 4);
  EXPECT_EQ(z, -128);
  // All negative: z at 127.
  x = {-0.5f, -1.0f, -2.0f};
  q = quantize(DType::INT8_ASYM_ROW, x);
  std::memcpy(&z, q.data() + 4, 4);
  EXPECT_EQ(z, 127);
  // A zero row: scale 0, everything decodes to 0.
  x = {0.0f, 0.0f};
  EXPECT_EQ(dequantize(DType::INT8_ASYM_ROW, quantize(DType::INT8_ASYM_ROW, x), 2), x);
}

TEST(QuantZeroPoint, SymmetricInt8UsesMinus127To127) {
  const std::vector<float> x = {-3.0f, 3.0f, 1.5f, -1.5f, 0.0f};
  const auto q = quantize(DType::INT8_ROW, x);
  const auto* qi = reinterpret_cast<const int8_t*>(q.data() + 4);
  EXPECT_EQ(qi[0], -127);
  EXPECT_EQ(qi[1], 127);
  EXPECT_EQ(qi[4], 0);
  EXPECT_EQ(dequantize(DType::INT8_ROW, q, 5)[0], -3.0f);
}

TEST(QuantZeroPoint, Int4GroupsMapTheirMinimumAndMaximumToNibbles0And15) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[static_cast<size_t>(j)] = std::sin(static_cast<float>(j)) * 2.0f + 0.5f;
  const auto q = quantize(DType::INT4_G32, x);
  int lo_idx = 0, hi_idx = 0;
  for (int j = 0; j < 32; ++j) {
    if (x[static_cast<size_t>(j)] < x[static_cast<size_t>(lo_idx)]) lo_idx = j;
    if (x[static_cast<size_t>(j)] > x[static_cast<size_t>(hi_idx)]) hi_idx = j;
  }
  auto nibble = [&](int j) { return j < 16 ? q[static_cast<size_t>(4 + j)] & 0x0F : q[static_cast<size_t>(4 + j - 16)] >> 4; };
  EXPECT_EQ(nibble(lo_idx), 0);
  EXPECT_EQ(nibble(hi_idx), 15);
}

// ---------------------------------------------------------------------------- error statistics

TEST(QuantTensorError, MseSnrMaxAndHistogramOfAKnownError) {
  const std::vector<float> ref = {1, 2, 3, 4}, got = {1, 2, 3, 5};
  TensorView a, b;
  a.name = b.name = "t";
  a.shape = b.shape = {2, 2};
  a.data = reinterpret_cast<const uint8_t*>(ref.data());
  b.data = reinterpret_cast<const uint8_t*>(got.data());
  a.nbytes = b.nbytes = 16;
  const TensorError e = measure_tensor_error(a, b, 3);
  EXPECT_DOUBLE_EQ(e.mse, 0.25);
  EXPECT_DOUBLE_EQ(e.max_abs, 1.0);
  EXPECT_NEAR(e.snr_db, 10 * std::log10(30.0), 1e-12);
  EXPECT_EQ(e.histogram, (std::vector<uint64_t>{0, 3, 1}));
  const TensorError same = measure_tensor_error(a, a);
  EXPECT_TRUE(std::isinf(same.snr_db));
  EXPECT_EQ(same.mse, 0.0);
}

}  // namespace
