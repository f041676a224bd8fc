// qrepack.h — 4-bit weights (INT4_G32, INT4_G128, Q4_0, Q4_1) repacked once into the
// row-interleaved tiles of qmatmul_kernels.h, so that the integer kernels accumulate 16 rows
// per vector and do the per-block scale work as vector work (qmatmul_packed()).
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
#include <unordered_map>
#include <vector>

#include "backend/cpu/qmatmul_kernels.h"
#include "backend/cpu/thread_pool.h"
#include "model/tensor.h"

namespace llmwb::cpu {

// Whether qmatmul_packed() handles weights of this type.
bool repackable(DType dtype);

struct PackedQ4 {
  DType dtype = DType::INT4_G32;
  int64_t rows = 0, cols = 0;
  int64_t nb = 0;   // blocks of 32 per row, ceil(cols / 32)
  int64_t gb = 1;   // blocks per scale group (4 for INT4_G128)
  int64_t ng = 0;   // groups per row
  uint64_t group_bytes = 0, tile_bytes = 0;
  int64_t tiles = 0;
  const uint8_t* data() const { return data_; }
  uint64_t bytes() const { return static_cast<uint64_t>(tiles) * tile_bytes; }

  std::vector<uint8_t> storage;   // bytes() + 63; data_ is its first 64-byte aligned byte
  const uint8_t* data_ = nullptr;
};

// Repacks W (rows checked against W.nbytes by the caller); tiles are filled on `pool`.
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

// Packed copies keyed by the weight's address, type and shape, built on first use. The owner
// (CpuBackend) lives no longer than the model whose tensors it was handed.
class RepackCache {
 public:
  // The packed copy of W (built now if new), or nullptr when W's type is not repackable.
  const PackedQ4* get(const TensorView& W, ThreadPool& pool);
  uint64_t bytes() const;
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<const uint8_t*, std::unique_ptr<PackedQ4>> map_;
};

}  // namespace llmwb::cpu
