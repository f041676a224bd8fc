// qrepack.h — block-quantized weights (INT4_G32, INT4_G128, Q4_0, Q4_1, Q8_0 and the
// k-quants Q4_K, Q5_K, Q6_K) repacked once into the row-interleaved tiles of
// qmatmul_kernels.h, so that the integer kernels accumulate 16 rows per vector and do the
// per-block scale work as vector work (qmatmul_packed()). PackedQ4 keeps the name of the
// first types it held.
//
// The model keeps its original TensorView (model files, quant reports, the GGUF writer and
// the CUDA upload read it); the CPU backend owns the packed copy in a RepackCache. To keep a
// single resident copy, the original's pages are handed back after repacking when they lie in
// a read-only private file mapping (the mmapped GGUF): madvise(MADV_DONTNEED) there only drops
// them from RSS, and anything reading them later refaults them from the file.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <compare>
#include <map>
#include <vector>

#include "backend/cpu/fpanel.h"
#include "backend/cpu/qmatmul_kernels.h"
#include "backend/cpu/thread_pool.h"
#include "memory/page_buffer.h"
#include "format/tensor.h"

namespace llmwb::cpu {

// Whether qmatmul_packed() handles weights of this type.
bool repackable(DType dtype);

struct PackedQ4 {
  DType dtype = DType::INT4_G32;
  int64_t rows = 0, cols = 0;
  int64_t nb = 0;   // blocks of 32 per row, ceil(cols / 32)
  int64_t gb = 1;   // blocks per scale group (4 for INT4_G128, 8 for the k-quants)
  int64_t ng = 0;   // groups per row
  uint64_t head_bytes = 0, block_bytes = 0;   // a group: its scales, then gb blocks
  uint64_t group_bytes = 0, tile_bytes = 0;
  int64_t tiles = 0;
  const uint8_t* data() const { return data_; }
  uint64_t bytes() const { return static_cast<uint64_t>(tiles) * tile_bytes; }

  // The tiles: bytes() at a 64-byte aligned address, either in `storage` (repack_q4) or in a
  // RepackCache's arena. Both are zero-filled page mappings on 2 MiB pages where the system
  // gives them: decode streams the whole copy every token, and with 4 KiB pages each page
  // costs a TLB miss and a page walk (tinyllama-shaped INT4_G32 decode: ~10% more time).
  const uint8_t* data_ = nullptr;
  PageBuffer storage;
};

// The shape of W's packed copy (no data yet); throws llmwb::Error for a type without one.
PackedQ4 packed_layout(const TensorView& W);
// Fills p's tiles at dst (p.bytes() zero bytes, 64-byte aligned) from W, on `pool`, and
// points p at them. W's rows are checked against W.nbytes by the caller.
void repack_into(const TensorView& W, PackedQ4& p, uint8_t* dst, ThreadPool& pool);
// Both, into a buffer of its own.
std::unique_ptr<PackedQ4> repack_q4(const TensorView& W, ThreadPool& pool);
// Block b of row r read back from the packed copy (the round trip of unpack_block).
void packed_block(const PackedQ4& p, int64_t r, int64_t b, qkernels::QBlock* out);

// y = W x over the packed copy at the current SIMD level; outputs as qmatmul() describes,
// summed as in qmatmul_kernels.h (the same bits at every level and any batch / threads).
void qmatmul_packed(ThreadPool& pool, const PackedQ4& W, const float* x, int64_t n_tokens, float* y);
// Several packed matrices with the same cols applied to one input (Q/K/V, gate/up): x is
// quantized once and the rows of all of them are split across the threads in one parallel
// pass (one thread handoff instead of one per matrix). Each o.y is bitwise what
// qmatmul_packed(*o.W, x) gives: every (row, token) output is summed on its own.
struct PackedOut {
  const PackedQ4* W = nullptr;
  float* y = nullptr;
};
void qmatmul_packed_multi(ThreadPool& pool, std::span<const PackedOut> outs, const float* x, int64_t n_tokens);
// Name of the repacked kernel qmatmul_packed uses now ("avx512vnni-x16", ...).
const char* qmatmul_packed_kernel_name();

// Packed copies keyed by the weight's address, type and shape, built on first use: the 4-bit
// tiles above and the 16-row panels of float weights (fpanel.h). The owner
// (CpuBackend) lives no longer than the model whose tensors it was handed. The copies are
// carved one after another out of 64 MiB huge-page chunks: a mapping per matrix would leave
// the last partial 2 MiB of each in small pages (~20% of tinyllama's bytes), and rounding
// each up to 2 MiB would cost ~1 MiB of RSS per matrix; in a chunk only the 2 MiB page where
// its last copy ends is partly unused (pages never touched are never backed).
class RepackCache {
 public:
  // The packed copy of W (built now if new), or nullptr when W's type is not repackable.
  const PackedQ4* get(const TensorView& W, ThreadPool& pool);
  // The 16-row panels of W (built now if new), or nullptr when W is not F32 / F16 / BF16.
  const FloatPanels* panels(const TensorView& W, ThreadPool& pool);
  // The panels of W if they were built, else nullptr (never builds).
  const FloatPanels* find_panels(const TensorView& W) const;
  uint64_t bytes() const;
  size_t size() const;
  static constexpr uint64_t kChunkBytes = uint64_t{64} << 20;

 private:
  // Address, type and shape all in the key: a second view of the same bytes as another type or
  // shape gets its own copy and never replaces one handed out earlier (the caller may still
  // hold that pointer, e.g. across matmul_shared_input's matrices).
  struct Key {
    const uint8_t* data;
    DType dtype;
    int64_t rows, cols;
    auto operator<=>(const Key&) const = default;
  };
  uint8_t* allocate(uint64_t n);   // zero bytes, 64-byte aligned; under mu_
  mutable std::mutex mu_;
  std::map<Key, std::unique_ptr<PackedQ4>> map_;
  std::map<Key, std::unique_ptr<FloatPanels>> panels_;
  std::vector<PageBuffer> chunks_;
  uint64_t chunk_used_ = 0;   // bytes handed out of chunks_.back()
};

}  // namespace llmwb::cpu
