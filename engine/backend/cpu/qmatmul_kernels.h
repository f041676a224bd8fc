// qmatmul_kernels.h — the integer-dot kernels behind qmatmul() (internal to the CPU backend).
//
// qmatmul.cpp quantizes the activations and owns threading; each kernel file
// (qmatmul_scalar.cpp, qmatmul_avx2.cpp, qmatmul_avx512vnni.cpp) computes a range of output
// rows for every token, reading the weights in place. As in matmul_kernels.h only plain data
// crosses this boundary, so no std:: template compiled with AVX-512 flags can be linked into
// a path that runs on a plain AVX2 CPU.
//
// Every weight dtype is seen as blocks of 32 elements (k-quant sub-blocks, INT4_G128 groups
// cut in four, one block per 32 columns of the per-row INT8 types). Block b of a weight row
// is 32 small integers q (signed for INT8_ROW, INT8_ASYM_ROW, Q8_0, Q6_K; unsigned 0..63 for
// the others), a scale for its first 16 and one for its last 16 elements (equal except Q6_K)
// and an offset coefficient m; the activations are blocks of 32 int8 qx with a scale dx and
// c = dx * sum(qx). Then, with isum_lo / isum_hi the exact integer dot products of the two
// halves,
//   block contribution = dx * (d_lo * isum_lo + d_hi * isum_hi) + m * c
// and y = post * (sum over blocks) [- post * z * sum_b c_b for INT8_ASYM_ROW], post being the
// per-row scale of the INT8 row types (1 otherwise). The summation order is in QUANTIZATION.md.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "format/tensor.h"

namespace llmwb::cpu::qkernels {

constexpr int kQB = 32;   // elements per activation block and per weight block

// 1 / d for an activation block's scale d = amax / 127, the same on every level: 0 for an
// all-zero block, and capped at FLT_MAX when d is denormal (amax < ~3.7e-37) so that 1 / d
// cannot overflow to infinity and turn an exact zero into 0 * inf = NaN.
inline float activation_inverse_scale(float d) {
  return d != 0.0f ? std::min(1.0f / d, std::numeric_limits<float>::max()) : 0.0f;
}

// Token rows quantized per block of 32 (qmatmul.cpp, quantize_activations).
struct QActs {
  const int8_t* q = nullptr;   // token t: q + t * q_stride, nb * 32 values in [-127, 127], 0 past K
  const float* d = nullptr;    // token t: d[t * nb + b], the block scale (x ~ d * q)
  const float* c = nullptr;    // token t: c[t * nb + b] = d * sum(q of the block)
  const float* csum = nullptr; // token t: sum_b c[t * nb + b], summed in increasing b
  // token t: s16[t * 2 nb + h], the exact sum of q over values [16 h, 16 h + 16) (the
  // repacked Q8_0 and Q6_K kernels take their weights' offsets off in integers with it)
  const int32_t* s16 = nullptr;
  int64_t q_stride = 0;        // bytes, a multiple of 64
};

struct QArgs {
  DType dtype = DType::INT8_ROW;
  const uint8_t* w = nullptr;   // row o starts at w + o * w_row_bytes
  uint64_t w_row_bytes = 0;
  int64_t cols = 0;             // K
  int64_t nb = 0;               // blocks per row, ceil(K / 32)
  QActs x;
  int64_t n_tokens = 0;
  float* y = nullptr;           // y[t * y_stride + o]
  int64_t y_stride = 0;
};

// One weight block, unpacked (the portable decoder; the SIMD kernels use it for partial
// blocks and decode the full blocks in registers to the same values).
struct QBlock {
  alignas(32) int8_t q[kQB];
  float d_lo, d_hi, m;
};

// Whether block values are signed (multiplied with the sign trick) or unsigned.
constexpr bool weights_signed(DType t) {
  return t == DType::INT8_ROW || t == DType::INT8_ASYM_ROW || t == DType::Q8_0 || t == DType::Q6_K;
}
constexpr bool qtype(DType t) {
  return t == DType::INT8_ROW || t == DType::INT8_ASYM_ROW || t == DType::INT4_G32 || t == DType::Q8_0 ||
         t == DType::Q4_0 || t == DType::Q4_1 || t == DType::INT4_G128 || t == DType::Q6_K || t == DType::Q4_K ||
         t == DType::Q5_K;
}

// Block b of a weight row of `cols` elements (zero past the end of the row).
void unpack_block(DType t, const uint8_t* row, int64_t cols, int64_t b, QBlock* out);
// The per-row scale of INT8_ROW / INT8_ASYM_ROW (1 for the block types) and the zero point.
void row_params(DType t, const uint8_t* row, float* post, float* z);
// Blocks [0, full_blocks) that the SIMD kernels decode in place; the rest go through
// unpack_block (a partial last block or group).
int64_t full_blocks(DType t, int64_t cols);

// The 4-bit types repacked into row-interleaved tiles (qrepack.h) for the kernels below.
// Tile t holds rows [16 t, 16 t + 16) (rows past the matrix are zero) as `ng` groups of
// group_bytes each; a group of `gb` blocks (1, or 4 for INT4_G128) is
//   d[16]  fp16, one scale per row
//   m[16]  fp16, one offset per row (absent for Q4_0, whose m is -8 d)
//   gb x 256 bytes of nibbles: block b is 4 chunks of 64 bytes; chunk v, byte 4 i + j
//   (row i, j = 0..3) holds q[i][8 v + j] in its low and q[i][8 v + 4 + j] in its high nibble.
// So one 64-byte vector is four consecutive weights of each of the 16 rows, and a 32-bit
// lane of it multiplies one broadcast dword of the activation block (vpdpbusd / maddubs).
// Per (row, token) every level computes, in increasing b (g = b / gb):
//   isum = sum of the 32 products q * qx (exact int32),
//   acc  = fma(float(isum), d_g * dx_b, acc),   macc = fma(m_g, c_b, macc),
//   y    = acc + macc,
// with the same integers and roundings, so the levels agree bitwise.
//
// The other repacked types (a group's scales first, then its gb blocks of block_bytes; the
// same 16-row tiles, "chunk v" always a 64-byte vector with 4 bytes per row):
//   Q8_0 (gb 1): d[16] fp16; the block as 8 chunks, chunk v byte 4 i + j = q[i][4 v + j] + 128
//     (unsigned, so vpdpbusd takes it directly; 128 x the activation sum, s16, comes off the
//     int32 sum). Per block: isum = sum q * qx exactly, acc = fma(float(isum), d * dx_b, acc),
//     y = acc.
//   Q4_K (gb 8, a super-block): d[16], dmin[16] fp16, sc[8][16] and mn[8][16] (6-bit, one byte
//     each, [block][row]), then the blocks as Q4_0's nibbles. Block j: d_j = d * sc[j],
//     m_j = dmin * mn[j]; acc = fma(float(isum), d_j * dx_b, acc), macc = fma(-m_j, c_b, macc),
//     y = acc + macc (the values of unpack_block: d_lo = d_j, m = -m_j).
//   Q5_K: Q4_K's, each block's 256 bytes of nibbles followed by 64 bytes of fifth bits: byte
//     4 i + j, bit v the fifth bit of q[i][8 v + j] (the low nibble of chunk v), bit 4 + v
//     that of q[i][8 v + 4 + j] (the high one); block_bytes 320.
//   Q6_K (gb 8): d[16] fp16, sc[16][16] int8 ([scale][row]: sub-blocks of 16), then each
//     block as Q4_0's nibbles of q + 32 (0..63) followed by two 64-byte planes of the top two
//     bits: plane p (chunks 2 p, 2 p + 1), byte 4 i + j, bits 2 k, 2 k + 1 for k = 0..3 those of
//     (chunk 2 p low, chunk 2 p high, chunk 2 p + 1 low, chunk 2 p + 1 high); block_bytes 384.
//     Block j: lo / hi = the exact sums over elements 0-15 / 16-31 of (q - 32) * qx (unsigned
//     sums less 32 s16), acc = fma(float(lo), d * sc[2 j] * dx_b, acc), then the same for hi
//     with sc[2 j + 1]; y = acc.
constexpr int kPackRows = 16;
constexpr int kPackBlockBytes = 256;
// The most tiles a one-token GEMV reads side by side (PackedArgs::streams is capped at it):
// AVX-512, 4 tiles of 16-lane accumulators; AVX2, 2 tiles of two 8-row halves (16 ymm).
constexpr int kAvx512DecodeTiles = 4;
constexpr int kAvx2DecodeTiles = 2;

struct PackedArgs {
  DType dtype = DType::INT4_G32;
  const uint8_t* w = nullptr;   // tile t at w + t * tile_bytes
  uint64_t tile_bytes = 0, group_bytes = 0;
  int64_t rows = 0;             // valid rows (the last tile may be partial)
  int64_t nb = 0;               // activation blocks per token row, ceil(K / 32)
  int64_t gb = 1;               // blocks per group
  QActs x;
  int64_t n_tokens = 0;
  float* y = nullptr;           // y[t * y_stride + o]
  int64_t y_stride = 0;
  int64_t prefetch = 0;         // one token: bytes ahead of each stream prefetched into L1 (decode_prefetch), 0 = none
  int streams = 4;              // one token: tiles read side by side (1, 2 or 4; AVX2 at most 2)
};

// The 4-bit types of the first layout above (Q4_0, Q4_1, INT4_G32, INT4_G128).
constexpr bool packed_q4_family(DType t) {
  return t == DType::Q4_0 || t == DType::Q4_1 || t == DType::INT4_G32 || t == DType::INT4_G128;
}
// Whether a packed type's group holds an offset per row (m[16] for the 4-bit family, dmin for
// Q4_K / Q5_K); Q4_0's is -8 d, Q8_0 and Q6_K take theirs off in integers.
constexpr bool packed_has_m(DType t) { return t != DType::Q4_0 && t != DType::Q8_0 && t != DType::Q6_K; }
// A group's scales (head), one block's bytes and the blocks per group of each packed type.
constexpr uint64_t packed_head_bytes(DType t) {
  return t == DType::Q4_K || t == DType::Q5_K ? 64 + 2 * 8 * kPackRows
         : t == DType::Q6_K                   ? 32 + 16 * kPackRows
         : packed_has_m(t)                    ? 64
                                              : 32;
}
constexpr uint64_t packed_block_bytes(DType t) {
  return t == DType::Q8_0 ? 2 * kPackBlockBytes
         : t == DType::Q5_K ? kPackBlockBytes + 64
         : t == DType::Q6_K ? kPackBlockBytes + 128
                            : kPackBlockBytes;
}
constexpr int64_t packed_group_blocks(DType t) {
  return t == DType::INT4_G128 ? 4 : t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K ? 8 : 1;
}
// The one-token GEMV's walk over rows [r0, r1) (r0 a multiple of kPackRows): groups of
// a.streams adjacent tiles (at least 1, at most MaxTiles), fewer at the end. f(tile, r, n,
// valid) gets the group's first tile, its first row, its tile count and each tile's valid
// rows (kPackRows, fewer in a last partial tile).
template <int MaxTiles, class F>
inline void for_each_decode_group(const PackedArgs& a, int64_t r0, int64_t r1, F&& f) {
  const int64_t side = a.streams < 1 ? 1 : a.streams > MaxTiles ? MaxTiles : a.streams;
  for (int64_t r = r0; r < r1;) {
    const int64_t tiles = (r1 - r + kPackRows - 1) / kPackRows;
    const int n = static_cast<int>(tiles < side ? tiles : side);
    int valid[MaxTiles] = {};
    for (int i = 0; i < n; ++i) {
      const int64_t v = r1 - (r + kPackRows * i);
      valid[i] = v >= kPackRows ? kPackRows : static_cast<int>(v);
    }
    f(a.w + (r / kPackRows) * a.tile_bytes, r, n, static_cast<const int*>(valid));
    r += kPackRows * n;
  }
}

// Row i's block jb of a packed group of Q8_0 or a k-quant, as unpack_block gives it (q, d_lo,
// d_hi, m); the 4-bit family reads back through qrepack.h's packed_block.
void unpack_packed_block(DType t, const uint8_t* grp, int i, int jb, QBlock* out);

struct QKernelSet {
  const char* name;
  // y[t][o] for o in [r0, r1) and every token.
  void (*rows)(const QArgs& a, int64_t r0, int64_t r1);
  int row_tile;   // row ranges are split at multiples of this
  // The same over repacked weights; r0 is a multiple of kPackRows, r1 one too or a.rows. With
  // one token the SIMD levels run a decode GEMV over several tiles at once (docs/CPU.md), with
  // the per-lane operations and order above, so the same bits.
  void (*packed_rows)(const PackedArgs& a, int64_t r0, int64_t r1);
  const char* packed_name;
  // Quantizes n_blocks full blocks of 32 activations (x + 32 b) into q + 32 b, d[b], c[b]; the
  // same bits at every level (qquant*.cpp).
  void (*quantize)(const float* x, int64_t n_blocks, int8_t* q, float* d, float* c);
  // What packed_rows' one-token GEMV does with PackedArgs::streams and ::prefetch: reads at
  // most this many tiles side by side, and honours the prefetch distance or ignores it.
  int max_decode_streams;
  bool decode_prefetches;
};

// One activation block of n <= 32 values (q zero past n): d = max|x| / 127, q = round(x / d),
// c = d * sum(q). The reference every level's quantize reproduces.
void quantize_block_scalar(const float* x, int n, int8_t* q, float* d, float* c);
void quantize_blocks_scalar(const float* x, int64_t n_blocks, int8_t* q, float* d, float* c);
void quantize_blocks_avx2(const float* x, int64_t n_blocks, int8_t* q, float* d, float* c);
void quantize_blocks_avx512(const float* x, int64_t n_blocks, int8_t* q, float* d, float* c);

void packed_rows_scalar(const PackedArgs& a, int64_t r0, int64_t r1);
void packed_rows_avx2(const PackedArgs& a, int64_t r0, int64_t r1);
void packed_rows_avx512vnni(const PackedArgs& a, int64_t r0, int64_t r1);

const QKernelSet& scalar_qkernels();
const QKernelSet& avx2_qkernels();
const QKernelSet& avx512vnni_qkernels();

}  // namespace llmwb::cpu::qkernels
