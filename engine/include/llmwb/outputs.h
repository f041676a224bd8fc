// llmwb/outputs.h — what generation returns (vLLM's RequestOutput / CompletionOutput).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "llmwb/speculative_stats.h"

namespace llmwb {

enum class FinishReason { None, Stop, Length, Abort, Error };
const char* to_string(FinishReason r);

// A token and its log probability (SamplingParams::logprobs).
struct TokenLogprob {
  int token = 0;
  float logprob = 0.f;
};

struct CompletionOutput {
  int index = 0;                 // which of the n samples
  std::string text;              // the completion only (not the prompt), as far as streamed
  std::string delta;             // text newly streamed by the step that returned this output
  std::vector<int> token_ids;    // completion token ids
  std::vector<float> token_probs;  // probability of each sampled token under the sampler
  // With SamplingParams::logprobs >= 0, one entry per completion token: its log probability and
  // the `logprobs` most likely tokens', most likely first.
  std::vector<float> token_logprobs;
  std::vector<std::vector<TokenLogprob>> top_logprobs;
  FinishReason finish_reason = FinishReason::None;
  std::string stop_reason;       // the stop string that matched, if any
  // Speculative decoding: 1 where the token was a draft token the target accepted (the rest
  // the target produced itself), one per token_ids entry; and this sample's counts.
  std::vector<uint8_t> token_from_draft;
  // Where each token's text ends in `text` (bytes), one per token_ids entry: token i's text is
  // [token_text_end[i-1], token_text_end[i]) (from 0 for the first). Bytes of an unfinished
  // UTF-8 character belong to the token that completes it; a stop string's cut may leave ends
  // past the text's size.
  std::vector<uint32_t> token_text_end;
  SpeculativeStats speculative;
  uint64_t seed = 0;             // this sample's RNG seed (InspectStepRequest::seed)
};

struct RequestOutput {
  uint64_t request_id = 0;
  std::string prompt;
  std::vector<int> prompt_token_ids;
  std::vector<CompletionOutput> outputs;
  bool finished = false;
  bool paused = false;           // Engine::pause holds it (not scheduled, KV kept)
  std::string error;             // non-empty when the request failed
  // Timings, seconds since the request was added.
  double time_to_first_token = 0.0;
  double total_time = 0.0;
  int num_cached_prompt_tokens = 0;  // prompt tokens whose KV came from the prefix cache
};

}  // namespace llmwb
