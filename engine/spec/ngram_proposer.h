// ngram_proposer.h — prompt lookup decoding (Saxena 2023; vLLM's "ngram" method): the guess is
// what followed the latest earlier occurrence of the sequence's last n tokens, n from
// prompt_lookup_max down to prompt_lookup_min, in the prompt and output so far. No model: it
// pays off where the output copies its context (code edits, summaries, retrieval answers).
#pragma once

#include <vector>

#include "spec/proposer.h"

namespace llmwb {

class NgramProposer final : public Proposer {
 public:
  NgramProposer(int min_n, int max_n) : min_n_(min_n), max_n_(max_n) {}
  std::string name() const override { return "ngram"; }
  void propose(std::span<DraftSlot> slots) override;

  // The guess for `tokens`: up to k tokens, empty when no suffix of min_n..max_n tokens occurred earlier.
  static std::vector<int> lookup(const std::vector<int>& tokens, int min_n, int max_n, int k);

 private:
  int min_n_, max_n_;
};

}  // namespace llmwb
