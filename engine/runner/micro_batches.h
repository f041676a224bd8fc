// micro_batches.h — a step's ForwardBatch cut into pipeline micro-batches (GPipe within one
// step): stage p runs micro-batch i while stage p + 1 runs micro-batch i - 1, so that with P
// stages and M micro-batches a stage idles (P - 1) / (M + P - 1) of the step instead of
// (P - 1) / P.
//
// The cut is by token ranges of the flattened batch: micro-batch i holds tokens
// [n * i / M, n * (i + 1) / M). A sequence whose new tokens straddle a cut is split into pieces,
// the later piece starting where the earlier ends (start_pos advanced). Causality holds because
// every stage runs its micro-batches in order: a later piece's attention finds the earlier
// piece's K/V already in that stage's layers of the cache. Decode batches (one token per
// sequence) are thereby split by sequences. Each micro-batch is a ForwardBatch of its own: its
// sequences' `first` count from its first token, its logits rows are numbered 0.. and
// logit_rows maps them back to the step's rows, and its `step` id is the step's with the
// micro-batch index in bits 52..62 (distinct from the step's and from each other's, so that a
// backend derives KV slots and attention tiles once per micro-batch).
#pragma once

#include <cstdint>
#include <vector>

#include "request/forward_batch.h"

namespace llmwb {

struct MicroBatch {
  ForwardBatch batch;
  int token0 = 0;                // its first token's index in the step's batch
  std::vector<int> logit_rows;   // the step's logits row of each of its logits rows
  bool captures_attention = false;   // holds (a piece of) the sequence marked capture_attention
};

// How many micro-batches a step of n_tokens runs as. requested: pipeline_micro_batches
// (0 = automatic). One for pipeline_parallel_size 1 (nothing to overlap); otherwise at most one
// token per micro-batch.
//
// Automatic, stages_share_cores (in-process ranks: threads of one machine): one. A stage waiting
// for its input lends its cores to the stage computing, so running the stages in turn, each
// with all the threads, already keeps every core busy; overlapping them splits the threads and
// adds the pipeline's fill and drain, (M + P - 1) / M of the work's time at best (measured in
// docs/PARALLEL.md). Ranks with cores of their own (MPI processes): pipeline_parallel_size
// micro-batches when each gets at least kMinAutoMicroBatchTokens tokens, else one. Every
// micro-batch reads the stage's weights again, so a step of few tokens, bound by reading the
// weights, gains less from the overlap than it pays: for f32 weights on a CPU core (tens of
// GFLOP/s against about 10 GB/s) a step pays for a cut in two from about 20 tokens.
constexpr int kMinAutoMicroBatchTokens = 16;
int micro_batch_count(int requested, int pipeline_parallel_size, int n_tokens, bool stages_share_cores);

// The step's batch cut into m token ranges (m >= 1, at most its token count); m == 1 gives one
// micro-batch equal to the batch.
std::vector<MicroBatch> split_micro_batches(const ForwardBatch& batch, int m);

}  // namespace llmwb
