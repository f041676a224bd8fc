// forward_flops: the work of a forward pass counted from the model's shape (llmwb/flops.h).
#include <gtest/gtest.h>

#include "llmwb/flops.h"

namespace llmwb {
namespace {

ModelInfo shape(int dim, int hidden, int layers, int heads, int kv_heads, int vocab) {
  ModelInfo m;
  m.dim = dim;
  m.hidden_dim = hidden;
  m.n_layers = layers;
  m.n_heads = heads;
  m.n_kv_heads = kv_heads;
  m.head_dim = dim / heads;
  m.vocab_size = vocab;
  return m;
}

// The count, one multiply-add at a time in the order a forward pass does them.
double walk(const ModelInfo& m, int64_t cached, int64_t n, int64_t logit_rows) {
  double macs = 0;
  for (int64_t t = 0; t < n; ++t) {
    const int64_t pos = cached + t;
    for (int l = 0; l < m.n_layers; ++l) {
      macs += 2.0 * m.dim * m.n_kv_heads * m.head_dim;        // k, v (the cache)
      // The last layer goes on only for the rows that get logits.
      if (l == m.n_layers - 1 && t < n - logit_rows) continue;
      macs += double(m.dim) * m.n_heads * m.head_dim;         // q
      for (int h = 0; h < m.n_heads; ++h) {
        for (int64_t p = 0; p <= pos; ++p) macs += 2.0 * m.head_dim;   // q.k, then weight x v
      }
      macs += double(m.n_heads) * m.head_dim * m.dim;         // o
      macs += 3.0 * m.dim * m.hidden_dim;                      // gate, up, down
    }
    if (t >= n - logit_rows) macs += double(m.dim) * m.vocab_size;
  }
  return 2 * macs;
}

TEST(Flops, MatchesAForwardPassWalkedStepByStep) {
  for (const ModelInfo& m : {shape(64, 172, 3, 8, 8, 100), shape(96, 256, 2, 6, 2, 50), shape(48, 128, 2, 4, 1, 77)}) {
    for (auto [cached, n, rows] : {std::tuple{0, 17, 1}, {5, 1, 1}, {9, 12, 12}, {0, 1, 1}, {31, 4, 2}}) {
      const ForwardFlops f = forward_flops(m, cached, n, rows);
      EXPECT_DOUBLE_EQ(f.total(), walk(m, cached, n, rows)) << m.dim << " " << cached << " " << n << " " << rows;
      EXPECT_GT(f.linear, 0);
      EXPECT_GT(f.attention, 0);
      EXPECT_GT(f.head, 0);
    }
  }
}

TEST(Flops, TinyllamaPrefillIsBelowTwiceTheParameters) {
  // tinyllama-1.1b: 1.10 G parameters, of which the embedding (65.5 M, a lookup) costs nothing,
  // the head (65.5 M) is computed once per prompt and so is the last layer past its K/V (1.98
  // GFLOP per token when that layer ran for every token).
  const ModelInfo m = shape(2048, 5632, 22, 32, 4, 32000);
  const double per_token = forward_flops(m, 0, 512, 1).total() / 512;
  EXPECT_NEAR(per_token / 1e9, 1.896, 0.005);
  // A decode step at context 512 computes the head for its token.
  const ForwardFlops d = forward_flops(m, 512, 1, 1);
  EXPECT_DOUBLE_EQ(d.head, 2.0 * 2048 * 32000);
}

TEST(Flops, NothingToDo) {
  EXPECT_EQ(forward_flops(shape(64, 172, 3, 8, 8, 100), 10, 0, 1).total(), 0.0);
}

// Decode reads every weight once but the embedding, of which it looks one row up, unless the
// embedding is also the head.
TEST(Flops, DecodeReadsEveryWeightButTheEmbeddingsOtherRows) {
  ModelInfo m = shape(64, 172, 1, 8, 8, 100);
  m.tensors = {{"token_embd.weight", "F16", {100, 64}, 100 * 64 * 2},
               {"blk.0.attn_q.weight", "F32", {64, 64}, 64 * 64 * 4},
               {"output_norm.weight", "F32", {64}, 64 * 4},
               {"output.weight", "Q8_0", {100, 64}, 100 * 68}};
  m.weight_bytes = 100 * 64 * 2 + 64 * 64 * 4 + 64 * 4 + 100 * 68;
  EXPECT_EQ(decode_weight_bytes(m), 64u * 2 + 64 * 64 * 4 + 64 * 4 + 100 * 68);
  m.tied_embeddings = true;
  m.tensors.pop_back();
  EXPECT_EQ(decode_weight_bytes(m), 100u * 64 * 2 + 64 * 64 * 4 + 64 * 4);
  m.tensors.clear();
  EXPECT_EQ(decode_weight_bytes(m), m.weight_bytes);
}

}  // namespace
}  // namespace llmwb
