// qrepack.cpp — builds the row-interleaved 4-bit tiles (layout in qmatmul_kernels.h) from any
// of the four Q4_1-family types through unpack_block, so the packed integers and scales are
// exactly the ones the in-place kernels decode, and keeps them in a per-backend cache.
#include "backend/cpu/qrepack.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "llmwb/errors.h"
#include "memory/mapped_file.h"

namespace llmwb::cpu {

using qkernels::kPackBlockBytes;
using qkernels::kPackRows;
using qkernels::kQB;
using qkernels::QBlock;

bool repackable(DType t) {
  return qkernels::packed_q4_family(t) || t == DType::Q8_0 || t == DType::Q4_K || t == DType::Q5_K ||
         t == DType::Q6_K;
}

namespace {

uint64_t scale_bytes(DType t) { return qkernels::packed_head_bytes(t); }
uint64_t block_bytes(DType t) { return qkernels::packed_block_bytes(t); }
int64_t group_blocks(DType t) { return qkernels::packed_group_blocks(t); }

void store_half(uint8_t* p, float v) {
  const uint16_t h = fp32_to_fp16(v);   // exact: v came from an fp16 field
  std::memcpy(p, &h, 2);
}

// Eight consecutive elements as nibble bytes (0..15 each, element k in byte k) to the packed
// dword: elements 0-3 in the low, 4-7 in the high nibbles of its four bytes.
inline uint32_t pack8(uint64_t n) { return static_cast<uint32_t>(n) | static_cast<uint32_t>(n >> 32) << 4; }

inline uint64_t load8(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// The four packed dwords (chunks v = 0..3) of full block b (every element inside the row),
// eight bytes at a time: the values unpack_block gives, as the round-trip test checks.
void full_block_dwords(DType t, const uint8_t* row, int64_t b, uint32_t out[4]) {
  constexpr uint64_t kLow = 0x0F0F0F0F0F0F0F0FULL;
  if (t == DType::INT4_G128) {   // 32 elements: the low or the high nibbles of 32 bytes
    const int s = static_cast<int>(b & 3);
    const uint8_t* qs = row + (b >> 2) * 68 + 4 + 32 * (s & 1);
    const int shift = s >= 2 ? 4 : 0;
    for (int v = 0; v < 4; ++v) out[v] = pack8((load8(qs + 8 * v) >> shift) & kLow);
    return;
  }
  // Q4_0 / Q4_1 / INT4_G32: byte j holds element j (low) and element j + 16 (high nibble).
  const uint8_t* qs = row + b * (t == DType::Q4_0 ? 18 : 20) + (t == DType::Q4_0 ? 2 : 4);
  const uint64_t A = load8(qs), B = load8(qs + 8);
  out[0] = pack8(A & kLow);
  out[1] = pack8(B & kLow);
  out[2] = pack8((A >> 4) & kLow);
  out[3] = pack8((B >> 4) & kLow);
}

}  // namespace

PackedQ4 packed_layout(const TensorView& W) {
  if (!repackable(W.dtype)) throw Error(W.name, std::string("repack: no packed layout for ") + dtype_name(W.dtype));
  PackedQ4 p;
  p.dtype = W.dtype;
  p.rows = W.rows();
  p.cols = W.cols();
  p.nb = (p.cols + kQB - 1) / kQB;
  p.gb = group_blocks(W.dtype);
  p.ng = (p.nb + p.gb - 1) / p.gb;
  p.head_bytes = scale_bytes(W.dtype);
  p.block_bytes = block_bytes(W.dtype);
  p.group_bytes = p.head_bytes + static_cast<uint64_t>(p.gb) * p.block_bytes;
  p.tile_bytes = static_cast<uint64_t>(p.ng) * p.group_bytes;
  p.tiles = (p.rows + kPackRows - 1) / kPackRows;
  return p;
}

std::unique_ptr<PackedQ4> repack_q4(const TensorView& W, ThreadPool& pool) {
  auto p = std::make_unique<PackedQ4>(packed_layout(W));
  p->storage = PageBuffer(p->bytes(), /*huge_pages=*/true);
  repack_into(W, *p, p->storage.data(), pool);
  return p;
}

namespace {

// Row i of tile group `grp` (group g of the row `row`) for Q8_0 and the k-quants, the layouts
// of qmatmul_kernels.h. The rows are whole blocks / super-blocks (their types demand it); the
// integers are unpack_block's and the fp16 fields are copied as they are.
void repack_group_other(DType t, const uint8_t* row, int64_t cols, int64_t g, int i, uint8_t* grp) {
  const int64_t gb = group_blocks(t);
  uint8_t* blocks = grp + scale_bytes(t);
  const uint64_t bb = block_bytes(t);
  const uint8_t* src = row + g * dtype_info(t).block_bytes;
  if (t == DType::Q8_0) {
    std::memcpy(grp + 2 * i, src, 2);
    for (int v = 0; v < 8; ++v)
      for (int j = 0; j < 4; ++j) blocks[64 * v + 4 * i + j] = static_cast<uint8_t>(src[2 + 4 * v + j] ^ 0x80);
    return;
  }
  if (t == DType::Q6_K) {
    std::memcpy(grp + 2 * i, src + 208, 2);
    for (int k = 0; k < 16; ++k) grp[32 + 16 * k + i] = src[192 + k];
  } else {
    std::memcpy(grp + 2 * i, src, 2);
    std::memcpy(grp + 32 + 2 * i, src + 2, 2);
    for (int j = 0; j < 8; ++j) {
      int sc, mn;
      k4_scale_min(j, src + 4, &sc, &mn);
      grp[64 + 16 * j + i] = static_cast<uint8_t>(sc);
      grp[64 + 128 + 16 * j + i] = static_cast<uint8_t>(mn);
    }
  }
  if (t == DType::Q4_K || t == DType::Q5_K) {
    // Sub-block jb is the low (jb even) or high nibbles of the 32 bytes at 32 (jb / 2), eight
    // bytes at a time as full_block_dwords does; Q5_K's fifth bit of element l is bit jb of qh[l].
    constexpr uint64_t kLow = 0x0F0F0F0F0F0F0F0FULL;
    const bool five = t == DType::Q5_K;
    const uint8_t* qh = src + 16;
    const uint8_t* ql = src + (five ? 48 : 16);
    for (int64_t jb = 0; jb < gb; ++jb) {
      uint8_t* blk = blocks + jb * bb;
      const uint8_t* qs = ql + 32 * (jb / 2);
      const int shift = (jb & 1) ? 4 : 0;
      for (int v = 0; v < 4; ++v) {
        const uint32_t dw = pack8((load8(qs + 8 * v) >> shift) & kLow);
        std::memcpy(blk + 64 * v + 4 * i, &dw, 4);
        if (five) {
          for (int j = 0; j < 4; ++j) {
            const int lo = (qh[8 * v + j] >> jb) & 1, hi = (qh[8 * v + 4 + j] >> jb) & 1;
            blk[256 + 4 * i + j] |= static_cast<uint8_t>(lo << v | hi << (4 + v));
          }
        }
      }
    }
    return;
  }
  QBlock qb;
  for (int64_t jb = 0; jb < gb; ++jb) {
    qkernels::unpack_block(t, row, cols, g * gb + jb, &qb);
    uint8_t* blk = blocks + jb * bb;
    const int bias = t == DType::Q6_K ? 32 : 0;
    for (int v = 0; v < 4; ++v) {
      for (int j = 0; j < 4; ++j) {
        const int lo = qb.q[8 * v + j] + bias, hi = qb.q[8 * v + 4 + j] + bias;
        blk[64 * v + 4 * i + j] = static_cast<uint8_t>((lo & 0x0F) | (hi & 0x0F) << 4);
        if (t == DType::Q5_K) {
          blk[256 + 4 * i + j] |= static_cast<uint8_t>(((lo >> 4) & 1) << v | ((hi >> 4) & 1) << (4 + v));
        } else if (t == DType::Q6_K) {
          const int k = 2 * (v & 1);   // chunk v's low bits at 2 k, its high at 2 k + 2
          blk[256 + 64 * (v >> 1) + 4 * i + j] |= static_cast<uint8_t>((lo >> 4) << (2 * k) | (hi >> 4) << (2 * k + 2));
        }
      }
    }
  }
}

}  // namespace

void repack_into(const TensorView& W, PackedQ4& P, uint8_t* base, ThreadPool& pool) {
  P.data_ = base;   // zero: rows past the matrix stay zero
  if (!qkernels::packed_q4_family(W.dtype)) {
    const uint64_t row_bytes = dtype_row_bytes(W.dtype, P.cols);
    pool.parallel_for(P.tiles, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        for (int i = 0; i < kPackRows && t * kPackRows + i < P.rows; ++i) {
          const uint8_t* row = W.data + (t * kPackRows + i) * row_bytes;
          for (int64_t g = 0; g < P.ng; ++g)
            repack_group_other(W.dtype, row, P.cols, g, i, base + t * P.tile_bytes + g * P.group_bytes);
        }
      }
    });
    return;
  }
  const uint64_t row_bytes = dtype_row_bytes(W.dtype, P.cols);
  const bool has_m = qkernels::packed_has_m(W.dtype);
  const int64_t nfull = qkernels::full_blocks(W.dtype, P.cols);
  const uint64_t src_group_bytes = W.dtype == DType::Q4_0 ? 18 : W.dtype == DType::INT4_G128 ? 68 : 20;
  pool.parallel_for(P.tiles, [&](int64_t t0, int64_t t1) {
    QBlock qb;
    for (int64_t t = t0; t < t1; ++t) {
      uint8_t* tile = base + t * P.tile_bytes;
      for (int i = 0; i < kPackRows && t * kPackRows + i < P.rows; ++i) {
        const uint8_t* row = W.data + (t * kPackRows + i) * row_bytes;
        for (int64_t b = 0; b < P.nb; ++b) {
          uint8_t* grp = tile + (b / P.gb) * P.group_bytes;
          uint8_t* blk = grp + scale_bytes(W.dtype) + (b % P.gb) * kPackBlockBytes + 4 * i;
          if (b < nfull) {
            uint32_t dw[4];
            full_block_dwords(W.dtype, row, b, dw);
            for (int v = 0; v < 4; ++v) std::memcpy(blk + 64 * v, &dw[v], 4);
            if (b % P.gb == 0) {   // the fp16 fields as they are: no conversion
              const uint8_t* src = row + (b / P.gb) * src_group_bytes;
              std::memcpy(grp + 2 * i, src, 2);
              if (has_m) std::memcpy(grp + 32 + 2 * i, src + 2, 2);
            }
            continue;
          }
          qkernels::unpack_block(W.dtype, row, P.cols, b, &qb);
          if (b % P.gb == 0) {
            store_half(grp + 2 * i, qb.d_lo);
            if (has_m) store_half(grp + 32 + 2 * i, qb.m);
          }
          for (int v = 0; v < 4; ++v)
            for (int j = 0; j < 4; ++j)
              blk[64 * v + j] = static_cast<uint8_t>(qb.q[8 * v + j] | (qb.q[8 * v + 4 + j] << 4));
        }
      }
    }
  });
}

void packed_block(const PackedQ4& p, int64_t r, int64_t b, QBlock* out) {
  const uint8_t* grp = p.data() + (r / kPackRows) * p.tile_bytes + (b / p.gb) * p.group_bytes;
  const int i = static_cast<int>(r % kPackRows);
  if (!qkernels::packed_q4_family(p.dtype)) {
    qkernels::unpack_packed_block(p.dtype, grp, i, static_cast<int>(b % p.gb), out);
    return;
  }
  uint16_t h;
  std::memcpy(&h, grp + 2 * i, 2);
  out->d_lo = out->d_hi = fp16_to_fp32(h);
  if (qkernels::packed_has_m(p.dtype)) {
    std::memcpy(&h, grp + 32 + 2 * i, 2);
    out->m = fp16_to_fp32(h);
  } else {
    out->m = -8.0f * out->d_lo;
  }
  const uint8_t* blk = grp + scale_bytes(p.dtype) + (b % p.gb) * kPackBlockBytes;
  for (int v = 0; v < 4; ++v)
    for (int j = 0; j < 4; ++j) {
      const uint8_t byte = blk[64 * v + 4 * i + j];
      out->q[8 * v + j] = static_cast<int8_t>(byte & 0x0F);
      out->q[8 * v + 4 + j] = static_cast<int8_t>(byte >> 4);
    }
}

const PackedQ4* RepackCache::get(const TensorView& W, ThreadPool& pool) {
  if (!repackable(W.dtype)) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  const Key key{W.data, W.dtype, W.rows(), W.cols()};
  if (auto it = map_.find(key); it != map_.end()) return it->second.get();
  if (W.data == nullptr || W.nbytes < static_cast<uint64_t>(W.rows()) * dtype_row_bytes(W.dtype, W.cols()))
    throw Error(W.name, "matmul: weight data missing or shorter than its shape");
  auto p = std::make_unique<PackedQ4>(packed_layout(W));
  repack_into(W, *p, allocate(p->bytes()), pool);
  release_mapped_pages(W.data, W.nbytes);
  const PackedQ4* out = p.get();
  map_.emplace(key, std::move(p));
  return out;
}

const FloatPanels* RepackCache::panels(const TensorView& W, ThreadPool& pool) {
  if (!panel_dtype(W.dtype)) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  const Key key{W.data, W.dtype, W.rows(), W.cols()};
  if (auto it = panels_.find(key); it != panels_.end()) return it->second.get();
  auto p = std::make_unique<FloatPanels>(panel_layout(W));   // checks W's data against its shape
  // A slice of panels at a time, each slice's original rows handed back once copied: the peak
  // RSS of a load then holds one copy plus a slice, not plus a whole matrix (an F32 output
  // head of 32000 x 2048 is 0.24 GiB). The last call catches the pages at the slices' seams.
  uint8_t* dst = allocate(p->bytes());
  const uint64_t slice_bytes = static_cast<uint64_t>(kPanelRows) * W.row_bytes();
  constexpr int64_t kSlicePanels = 256;
  for (int64_t q0 = 0; q0 < p->panels; q0 += kSlicePanels) {
    const int64_t q1 = std::min(p->panels, q0 + kSlicePanels);
    pack_panels_into(W, *p, dst, pool, q0, q1);
    const uint64_t end = std::min<uint64_t>(W.nbytes, static_cast<uint64_t>(q1) * slice_bytes);
    release_mapped_pages(W.data + q0 * slice_bytes, end - q0 * slice_bytes);
  }
  release_mapped_pages(W.data, W.nbytes);
  p->data = dst;
  const FloatPanels* out = p.get();
  panels_.emplace(key, std::move(p));
  return out;
}

const FloatPanels* RepackCache::find_panels(const TensorView& W) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = panels_.find(Key{W.data, W.dtype, W.rows(), W.cols()});
  return it == panels_.end() ? nullptr : it->second.get();
}

uint8_t* RepackCache::allocate(uint64_t n) {
  n = (n + 63) / 64 * 64;
  if (chunks_.empty() || chunk_used_ + n > chunks_.back().size()) {
    chunks_.emplace_back(std::max(n, kChunkBytes), /*huge_pages=*/true);
    chunk_used_ = 0;
  }
  uint8_t* p = chunks_.back().data() + chunk_used_;
  chunk_used_ += n;
  return p;
}

uint64_t RepackCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t s = 0;
  for (const auto& [k, v] : map_) s += v->bytes();
  for (const auto& [k, v] : panels_) s += v->bytes();
  return s;
}

size_t RepackCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return map_.size() + panels_.size();
}

}  // namespace llmwb::cpu
