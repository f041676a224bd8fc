// loader_expectations.h — GoogleTest checks shared by the model-loader tests: an operation
// fails with an llmwb::Error whose message names what it should, two configs describe the
// same transformer shape; and the small shape those tests make random models of.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "llmwb/errors.h"
#include "format/model_config.h"

namespace llmwb::test {

// Runs `op` and expects an llmwb::Error whose message contains every one of `parts` (the file,
// the tensor or key, the numbers involved).
template <typename Op>
void expect_error_naming(Op&& op, const std::vector<std::string>& parts) {
  try {
    op();
    ADD_FAILURE() << "no error; expected one mentioning '" << (parts.empty() ? "" : parts.front()) << "'";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}

// The hyper-parameters that fix the weights' shapes and the math (not the RoPE layout, name or
// token ids, which formats legitimately differ in).
inline void expect_same_shape(const ModelConfig& got, const ModelConfig& want) {
  EXPECT_EQ(got.dim, want.dim);
  EXPECT_EQ(got.hidden_dim, want.hidden_dim);
  EXPECT_EQ(got.n_layers, want.n_layers);
  EXPECT_EQ(got.n_heads, want.n_heads);
  EXPECT_EQ(got.n_kv_heads, want.n_kv_heads);
  EXPECT_EQ(got.head_dim, want.head_dim);
  EXPECT_EQ(got.vocab_size, want.vocab_size);
  EXPECT_FLOAT_EQ(got.norm_eps, want.norm_eps);
  EXPECT_FLOAT_EQ(got.rope_theta, want.rope_theta);
}

// 2 layers, dim 64, 4 heads sharing 2 KV heads (GQA), ffn 96 (a multiple of 32, so Q8_0 and
// Q4_0 can pack every row), a 300-piece synthetic vocabulary: a model of ~70K parameters.
inline ModelConfig small_test_config() {
  ModelConfig c;
  c.name = "small-test";
  c.dim = 64;
  c.hidden_dim = 96;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 16;
  c.vocab_size = 300;
  c.max_seq_len = 128;
  return c;
}

}  // namespace llmwb::test
