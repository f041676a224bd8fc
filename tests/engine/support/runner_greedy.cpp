#include "support/runner_greedy.h"

#include <algorithm>
#include <cmath>

namespace llmwb::test {

GreedyRun greedy_two_sequences(ModelRunner& runner, int vocab_size, const GreedySetup& setup, int steps) {
  runner.allocate_kv(setup.num_blocks, setup.block_size, KVDType::F32);
  std::vector<std::vector<int>> seq = setup.prompts;
  std::vector<int> pos(seq.size(), 0);
  GreedyRun out;
  for (int s = 0; s < steps; ++s) {
    ForwardBatch b;
    b.step = uint64_t(s + 1);
    for (size_t q = 0; q < seq.size(); ++q) {
      ForwardSeq fs;
      fs.first = int(b.tokens.size());
      const int from = pos[q];
      fs.n_tokens = int(seq[q].size()) - from;
      fs.start_pos = from;
      fs.decode = s > 0;
      fs.block_table = &setup.block_tables[q];
      fs.logits_row = int(q);
      b.tokens.insert(b.tokens.end(), seq[q].begin() + from, seq[q].end());
      b.seqs.push_back(fs);
    }
    b.num_logit_rows = int(seq.size());
    std::vector<float> logits(seq.size() * size_t(vocab_size), NAN);
    runner.execute(b, logits.data(), -1, nullptr, nullptr);
    for (size_t q = 0; q < seq.size(); ++q) {
      pos[q] = int(seq[q].size());
      const float* row = logits.data() + q * size_t(vocab_size);
      const int t = int(std::max_element(row, row + vocab_size) - row);
      seq[q].push_back(t);
      out.tokens.push_back(t);
    }
    out.logits.push_back(std::move(logits));
  }
  return out;
}

}  // namespace llmwb::test
