// token_delta.h — what one generation produced since the last delta, as the worker sends it.
//
// The worker coalesces the engine's per-step outputs into deltas at screen rate so that the
// GUI thread handles a few dozen events a second however fast the model runs.
#pragma once

#include <QMetaType>

#include <string>
#include <utility>
#include <vector>

#include "llmwb/outputs.h"

namespace llmwb::ui {

struct TokenDelta {
  quint64 ticket = 0;
  std::vector<int> token_ids;      // tokens new since the previous delta
  std::vector<float> token_probs;  // their probabilities under the sampler
  // Speculative decoding: 1 where the token was a draft guess the target accepted; and the
  // request's counts so far (drafted, accepted, per position).
  std::vector<uint8_t> token_from_draft;
  // Where the accepted guesses' text is: [start, end) in UTF-16 code units of the text streamed
  // so far (every delta's `text`, concatenated), the parts this delta's text reaches, ascending.
  std::vector<std::pair<int, int>> draft_spans;
  SpeculativeStats speculative;
  std::string text;                // text new since the previous delta
  bool finished = false;
  // Set when finished: the whole completion (stop strings removed) and how it ended.
  FinishReason finish_reason = FinishReason::None;
  std::string final_text;
  std::string error;
  int num_prompt_tokens = 0;
  int num_output_tokens = 0;  // tokens generated so far, including this delta
  double time_to_first_token = 0.0;
  double total_time = 0.0;
  // Set on the finishing delta of a request the engine ran: the prompt as it was tokenized.
  std::vector<int> prompt_token_ids;
};

}  // namespace llmwb::ui

Q_DECLARE_METATYPE(llmwb::ui::TokenDelta)
