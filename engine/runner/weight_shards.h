// weight_shards.h — one rank's part of a Llama model for tensor and pipeline parallelism
// (Megatron-LM's split): its pipeline stage's layers; of each layer its tensor-parallel rank's
// query heads and the KV heads they read (whole GQA groups), i.e. rows of wq / wk / wv, the
// matching columns of wo, a range of the FFN's hidden units (rows of w1 / w3, columns of w2);
// and a range of the vocabulary's rows of the output head. The embedding is replicated.
//
// Row ranges are views of the mapped file (the rows of a row-major {out, in} matrix are
// contiguous); column ranges are copied into buffers the shard owns, on block boundaries for
// quantized types (else llmwb::Error naming tensor_parallel_size).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "format/model_config.h"
#include "model/llama_weights.h"

namespace llmwb {

struct ShardSpec {
  int tp_rank = 0, tp_size = 1;
  int first_layer = 0, n_layers = 0;   // this stage's layers
};

struct WeightShard {
  ModelConfig config;          // n_heads, n_kv_heads, hidden_dim, n_layers, vocab_size: the shard's
  LlamaWeights weights;
  int vocab_begin = 0;         // the output head's rows: [vocab_begin, vocab_begin + config.vocab_size)
  std::vector<std::shared_ptr<uint8_t>> owned;   // the column slices' bytes
};

// Throws llmwb::Error("tensor_parallel_size", ...) when tp_size does not divide the KV heads or a
// column split cannot fall on the weights' block boundaries.
WeightShard make_weight_shard(const ModelConfig& config, const LlamaWeights& weights, const ShardSpec& spec);

// Throws llmwb::Error("tensor_parallel_size" / "pipeline_parallel_size", ...) unless tp divides
// the KV heads and 1 <= pp <= the layers.
void check_parallel_layout(const ModelConfig& config, int tp, int pp);

// [begin, end) of part `i` of `n` of [0, total), boundaries on multiples of `align` (the last
// part ends at total); throws llmwb::Error(field, ...) when a part would be empty.
std::pair<int64_t, int64_t> split_range(int64_t total, int n, int i, int64_t align, const char* field,
                                        const char* what);

}  // namespace llmwb
