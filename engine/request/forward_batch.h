// forward_batch.h — one engine step's work for the model, flattened (as vLLM does): the new
// tokens of every scheduled sequence back to back, each sequence with its start position and
// block table. Prefill chunks and single decode tokens mix freely in one batch.
#pragma once

#include <cstdint>
#include <vector>

namespace llmwb {

struct ForwardSeq {
  int first = 0;          // index of this sequence's first new token in ForwardBatch::tokens
  int n_tokens = 0;       // new tokens, at positions start_pos .. start_pos + n_tokens - 1
  int start_pos = 0;      // = tokens already in the KV cache (prefix hits and earlier chunks)
  const std::vector<int>* block_table = nullptr;
  int logits_row = -1;    // row of the logits output for the last new token, -1: not needed
  bool capture_attention = false;  // record this sequence's attention weights (heatmap)
  // Logits for every new token, in rows logits_row .. logits_row + n_tokens - 1 (perplexity
  // and KL divergence in engine/quant score every position of a text in one prefill).
  bool all_logits = false;
  // The scheduler's is_decode: the one token sampled last step (a runner may specialise pure
  // decode batches, e.g. CUDA graph replay).
  bool decode = false;
};

struct ForwardBatch {
  std::vector<int> tokens;
  std::vector<ForwardSeq> seqs;
  int num_logit_rows = 0;
  // Names this batch's contents (the engine's step number; another id for the last layer's
  // logit-row batch), so that a runner builds what it derives from them (KV slots, attention
  // tiles) once per step rather than once per layer. 0: unnamed, derived again at every use.
  uint64_t step = 0;
  // Early exit (speculative decoding's layers:K draft): run only the first exit_layers layers,
  // then the final norm and head. 0: every layer.
  int exit_layers = 0;
};

// Attention weights recorded during a forward pass for the sequence marked capture_attention:
// for each of its new tokens (query) and each head, the softmax row over positions 0..pos.
struct AttentionRecord {
  int layer = 0;
  int n_heads = 0;
  int start_pos = 0;                         // position of the first query
  std::vector<std::vector<float>> rows;      // [query * n_heads + head] -> weights (pos+1 long)
};

}  // namespace llmwb
