#include "runner/micro_batches.h"

#include <algorithm>

#include "llmwb/errors.h"

namespace llmwb {

int micro_batch_count(int requested, int pipeline_parallel_size, int n_tokens, bool stages_share_cores) {
  if (requested < 0) throw Error("pipeline_micro_batches", "must be >= 0 (0: automatic), got " + std::to_string(requested));
  if (pipeline_parallel_size <= 1 || n_tokens <= 1) return 1;
  if (requested == 0)
    return !stages_share_cores && n_tokens >= pipeline_parallel_size * kMinAutoMicroBatchTokens ? pipeline_parallel_size
                                                                                                  : 1;
  return std::min(requested, n_tokens);
}

std::vector<MicroBatch> split_micro_batches(const ForwardBatch& batch, int m) {
  const int n = static_cast<int>(batch.tokens.size());
  m = std::max(1, std::min(m, n));
  std::vector<MicroBatch> out(static_cast<size_t>(m));
  for (int i = 0; i < m; ++i) {
    MicroBatch& mb = out[static_cast<size_t>(i)];
    const int t0 = static_cast<int>(int64_t(n) * i / m), t1 = static_cast<int>(int64_t(n) * (i + 1) / m);
    mb.token0 = t0;
    ForwardBatch& b = mb.batch;
    b.tokens.assign(batch.tokens.begin() + t0, batch.tokens.begin() + t1);
    b.exit_layers = batch.exit_layers;
    b.step = m == 1 || batch.step == 0 ? batch.step : batch.step ^ (uint64_t(i + 1) << 52);
    for (const ForwardSeq& s : batch.seqs) {
      const int a = std::max(s.first, t0), e = std::min(s.first + s.n_tokens, t1);
      if (a >= e) continue;
      ForwardSeq p = s;
      p.first = a - t0;
      p.n_tokens = e - a;
      p.start_pos = s.start_pos + (a - s.first);
      p.logits_row = -1;
      if (s.logits_row >= 0) {
        // The sequence's logits rows: one for its last token, or one per token (all_logits).
        const int from = s.all_logits ? s.first : s.first + s.n_tokens - 1;
        const int r0 = std::max(a, from);
        if (r0 < e) {
          p.logits_row = b.num_logit_rows;
          for (int t = r0; t < e; ++t) mb.logit_rows.push_back(s.logits_row + (t - from));
          b.num_logit_rows += e - r0;
        }
      }
      if (s.capture_attention) mb.captures_attention = true;
      b.seqs.push_back(p);
    }
  }
  return out;
}

}  // namespace llmwb
