// runner_greedy.h — greedy decoding straight through a ModelRunner (no engine): two sequences,
// each with its own block table, a prompt step and then one token at a time, every step's
// logits kept. The parallel runners' tests (CPU ranks, CUDA ranks) compare these runs between
// layouts.
#pragma once

#include <vector>

#include "runner/model_runner.h"

namespace llmwb::test {

struct GreedyRun {
  std::vector<int> tokens;                 // greedy continuation of both sequences, step by step
  std::vector<std::vector<float>> logits;  // every step's two logits rows
};

struct GreedySetup {
  int num_blocks = 16, block_size = 8;
  std::vector<std::vector<int>> prompts;       // two sequences' prompts (token ids below the vocabulary)
  std::vector<std::vector<int>> block_tables;  // their blocks (enough for prompt + steps)
};

// Runs `steps` steps. The logits rows start as NaN, so a row the runner does not write shows.
GreedyRun greedy_two_sequences(ModelRunner& runner, int vocab_size, const GreedySetup& setup, int steps);

}  // namespace llmwb::test
