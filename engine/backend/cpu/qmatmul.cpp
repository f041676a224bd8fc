// qmatmul.cpp — quantizes the activations and splits the output rows across threads for the
// integer-dot kernels (qmatmul_kernels.h).
//
// Activation format, per token row of K values: nb = ceil(K / 32) blocks, each with
// d = max|x| / 127 (float), q = round(x / d) in [-127, 127] (int8, 0 past K) and
// c = d * sum(q), which the weight types with an offset (Q4_0's -8, Q4_1 / INT4 minimums,
// k-quant mins, INT8_ASYM_ROW's zero point) multiply. Each token row is quantized on its own,
// so its blocks do not depend on the batch. Each level's quantizer (qquant*.cpp) gives the
// scalar one's bits, so every SIMD level multiplies exactly the same integers.
#include "backend/cpu/qmatmul.h"

#include <algorithm>
#include <vector>

#include "backend/cpu/matmul.h"
#include "backend/cpu/qmatmul_kernels.h"
#include "backend/cpu/qrepack.h"
#include "llmwb/errors.h"

namespace llmwb::cpu {

namespace {

using qkernels::kQB;

bool has_vnni() {
  static const bool v = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx2");
  }();
  return v;
}

const qkernels::QKernelSet& qkernel_set() {
  switch (simd_level()) {
    case SimdLevel::Avx512: return has_vnni() ? qkernels::avx512vnni_qkernels() : qkernels::avx2_qkernels();
    case SimdLevel::Avx2: return qkernels::avx2_qkernels();
    case SimdLevel::Scalar: break;
  }
  return qkernels::scalar_qkernels();
}

// Full blocks by the current level's quantizer (bitwise the scalar one), the partial last
// block by the scalar one; csum in increasing b.
void quantize_token(const qkernels::QKernelSet& ks, const float* x, int64_t K, int64_t nb, int8_t* q, float* d,
                    float* c, float* csum) {
  const int64_t full = K / kQB;
  ks.quantize(x, full, q, d, c);
  if (full < nb) qkernels::quantize_block_scalar(x + full * kQB, static_cast<int>(K - full * kQB), q + full * kQB,
                                                 d + full, c + full);
  float s = 0.0f;
  for (int64_t b = 0; b < nb; ++b) s += c[b];
  *csum = s;
}

}  // namespace

bool qmatmul_handles(DType dtype) { return qkernels::qtype(dtype); }

const char* qmatmul_kernel_name() { return qkernel_set().name; }

QuantizedDecodeShape qmatmul_decode_shape() {
  const qkernels::QKernelSet& ks = qkernel_set();
  return {ks.decode_prefetches ? decode_prefetch().quantized : 0, std::min(decode_streams(), ks.max_decode_streams)};
}

void qmatmul_quantize_row(const float* x, int64_t cols, int8_t* q, float* d, float* c, float* csum) {
  quantize_token(qkernel_set(), x, cols, (cols + kQB - 1) / kQB, q, d, c, csum);
}

void qmatmul_activation_roundtrip(const float* x, int64_t cols, float* out) {
  const int64_t nb = (cols + kQB - 1) / kQB;
  std::vector<int8_t> q(static_cast<size_t>(nb * kQB));
  std::vector<float> d(static_cast<size_t>(nb)), c(static_cast<size_t>(nb));
  float csum;
  qmatmul_quantize_row(x, cols, q.data(), d.data(), c.data(), &csum);
  for (int64_t k = 0; k < cols; ++k) out[k] = d[static_cast<size_t>(k / kQB)] * static_cast<float>(q[static_cast<size_t>(k)]);
}

namespace {

// Quantizes the n_tokens rows of x (K values each, nb blocks) into per-thread buffers that
// only grow: after the first call of the largest shape, no allocation here.
qkernels::QActs quantize_activations(ThreadPool& pool, const float* x, int64_t K, int64_t nb, int64_t n_tokens) {
  thread_local std::vector<int8_t> q_buf;
  thread_local std::vector<float> f_buf;
  thread_local std::vector<int32_t> s_buf;
  const int64_t q_stride = round_up(nb * kQB, 64);
  const size_t q_bytes = static_cast<size_t>(n_tokens * q_stride + 64);
  if (q_buf.size() < q_bytes) q_buf.resize(q_bytes);
  const size_t f_floats = static_cast<size_t>(n_tokens * (2 * nb + 1));
  if (f_buf.size() < f_floats) f_buf.resize(f_floats);
  const size_t s_ints = static_cast<size_t>(n_tokens * 2 * nb);
  if (s_buf.size() < s_ints) s_buf.resize(s_ints);
  int32_t* s16 = s_buf.data();
  auto* q = reinterpret_cast<int8_t*>((reinterpret_cast<uintptr_t>(q_buf.data()) + 63) & ~uintptr_t{63});
  float* d = f_buf.data();
  float* c = d + n_tokens * nb;
  float* csum = c + n_tokens * nb;
  const qkernels::QKernelSet& ks = qkernel_set();
  pool.parallel_for(n_tokens, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      quantize_token(ks, x + t * K, K, nb, q + t * q_stride, d + t * nb, c + t * nb, csum + t);
      const int8_t* qt = q + t * q_stride;
      for (int64_t h = 0; h < 2 * nb; ++h) {
        int32_t sum = 0;
        for (int k = 0; k < kQB / 2; ++k) sum += qt[h * (kQB / 2) + k];
        s16[t * 2 * nb + h] = sum;
      }
    }
  });
  return {q, d, c, csum, s16, q_stride};
}

// Row chunks: multiples of the tile, big enough to be worth a thread.
int64_t row_grain(int64_t tile, int64_t K, int64_t n_tokens) {
  return round_up(std::max<int64_t>(tile, kMinMacsPerChunk / std::max<int64_t>(1, K * n_tokens)), tile);
}

}  // namespace

void qmatmul(ThreadPool& pool, const TensorView& W, const float* x, int64_t n_tokens, float* y) {
  if (!qmatmul_handles(W.dtype)) throw Error(W.name, std::string("qmatmul: no integer kernel for ") + dtype_name(W.dtype));
  const int64_t rows = W.rows(), K = W.cols();
  if (n_tokens <= 0 || rows == 0) return;
  qkernels::QArgs a;
  a.dtype = W.dtype;
  a.w = W.data;
  a.cols = K;
  a.w_row_bytes = dtype_row_bytes(W.dtype, K);
  a.nb = (K + kQB - 1) / kQB;
  a.n_tokens = n_tokens;
  a.y = y;
  a.y_stride = rows;
  a.x = quantize_activations(pool, x, K, a.nb, n_tokens);
  const qkernels::QKernelSet& ks = qkernel_set();
  const int64_t grain = row_grain(ks.row_tile, K, n_tokens);
  auto body = [&](int64_t r0, int64_t r1) { ks.rows(a, r0, r1); };
  if (n_tokens <= kBalancedMaxTokens) pool.parallel_for_balanced(rows, body, round_up(std::max(grain, kBalancedRows), ks.row_tile));
  else pool.parallel_for(rows, body, grain);
}

void qmatmul_packed(ThreadPool& pool, const PackedQ4& W, const float* x, int64_t n_tokens, float* y) {
  const PackedOut out{&W, y};
  qmatmul_packed_multi(pool, std::span<const PackedOut>(&out, 1), x, n_tokens);
}

void qmatmul_packed_multi(ThreadPool& pool, std::span<const PackedOut> outs, const float* x, int64_t n_tokens) {
  if (n_tokens <= 0 || outs.empty()) return;
  const int64_t K = outs[0].W->cols, nb = outs[0].W->nb;
  // The matrices side by side in one row space, each padded to whole tiles so that every
  // chunk (a multiple of the tile) starts a tile in each matrix it touches.
  thread_local std::vector<qkernels::PackedArgs> args;
  thread_local std::vector<int64_t> off;
  args.assign(outs.size(), {});
  const int streams = decode_streams();
  off.assign(outs.size() + 1, 0);
  for (size_t i = 0; i < outs.size(); ++i) {
    const PackedQ4& W = *outs[i].W;
    if (W.cols != K) throw Error("qmatmul_packed_multi", "weights of different widths share one input");
    qkernels::PackedArgs& a = args[i];
    a.dtype = W.dtype;
    a.w = W.data();
    a.tile_bytes = W.tile_bytes;
    a.group_bytes = W.group_bytes;
    a.rows = W.rows;
    a.nb = W.nb;
    a.gb = W.gb;
    a.n_tokens = n_tokens;
    a.y = outs[i].y;
    a.y_stride = W.rows;
    a.prefetch = decode_prefetch().quantized;
    a.streams = streams;
    off[i + 1] = off[i] + round_up(W.rows, qkernels::kPackRows);
  }
  const qkernels::QActs xa = quantize_activations(pool, x, K, nb, n_tokens);
  for (qkernels::PackedArgs& a : args) a.x = xa;
  const qkernels::QKernelSet& ks = qkernel_set();
  // Worker threads read the caller's thread_local vectors through these.
  const qkernels::PackedArgs* ap = args.data();
  const int64_t* op = off.data();
  const size_t n = outs.size();
  auto rows = [&](int64_t r0, int64_t r1) {
    for_each_side_by_side(r0, r1, op, n, [&](size_t i) { return ap[i].rows; },
                          [&](size_t i, int64_t lo, int64_t hi) { ks.packed_rows(ap[i], lo, hi); });
  };
  const int64_t grain = row_grain(qkernels::kPackRows, K, n_tokens);
  // Decode and verification passes stream the weights: balanced (a slower thread's rows are
  // taken over), in chunks of whole 4-tile decode groups. Prefill keeps its static split.
  if (n_tokens <= kBalancedMaxTokens) pool.parallel_for_balanced(op[n], rows, round_up(std::max(grain, kBalancedRows), qkernels::kPackRows));
  else pool.parallel_for(op[n], rows, grain);
}

const char* qmatmul_packed_kernel_name() { return qkernel_set().packed_name; }

}  // namespace llmwb::cpu
