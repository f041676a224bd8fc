// llmwb/sampling_params.h — how the next token is chosen (vLLM's SamplingParams).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace llmwb {

struct SamplingParams {
  float temperature = 1.0f;         // 0 means greedy (argmax)
  float top_p = 1.0f;               // nucleus: keep the smallest set with mass >= top_p
  int top_k = 0;                    // keep the k most likely; 0 or negative = all
  float min_p = 0.0f;               // drop tokens with p < min_p * p_max
  float repetition_penalty = 1.0f;  // CTRL-style: logits of seen tokens /= (or *=) penalty
  // OpenAI's penalties over the tokens generated so far (not the prompt), in [-2, 2]: a token's
  // logit loses presence_penalty once it has appeared and frequency_penalty per appearance.
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  // -1: no log probabilities; 0: the sampled token's; k > 0 (at most 20): also the k most likely
  // tokens'. From the log-softmax of the logits after the penalties, before temperature.
  int logprobs = -1;
  int max_tokens = 256;             // completion tokens at most
  std::optional<uint64_t> seed;     // per-request seed: same seed, same output
  std::vector<std::string> stop;    // stop strings (not included in the text)
  bool ignore_eos = false;          // keep generating past EOS (benchmarks)
  int n = 1;                        // samples per prompt (they share the prompt's KV blocks)

  // Throws llmwb::Error naming the field when a value is out of range.
  void validate() const;
};

}  // namespace llmwb
