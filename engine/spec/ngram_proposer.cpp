#include "spec/ngram_proposer.h"

#include <algorithm>

namespace llmwb {

std::vector<int> NgramProposer::lookup(const std::vector<int>& tokens, int min_n, int max_n, int k) {
  const int len = static_cast<int>(tokens.size());
  for (int n = std::min(max_n, len - 1); n >= min_n; --n) {
    const int* suffix = tokens.data() + (len - n);
    // Latest earlier occurrence first: recent context predicts best.
    for (int j = len - n - 1; j >= 0; --j) {
      if (!std::equal(suffix, suffix + n, tokens.data() + j)) continue;
      const int from = j + n, to = std::min(len, from + k);
      return std::vector<int>(tokens.begin() + from, tokens.begin() + to);
    }
  }
  return {};
}

void NgramProposer::propose(std::span<DraftSlot> slots) {
  for (DraftSlot& s : slots) s.tokens = lookup(s.seq->tokens, min_n_, max_n_, s.k);
}

}  // namespace llmwb
