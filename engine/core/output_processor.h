// output_processor.h — from sampled tokens to what callers see (vLLM's OutputProcessor): the
// stop conditions (an end-of-generation token, a stop string, the length limit), incremental
// detokenization, and each step's delta with the text that might still become a stop string
// held back. Deltas are computed here once; the CLI, the GUI and the C++ API use them as they are.
#pragma once

#include <optional>
#include <string>

#include "core/request_state.h"
#include "tokenizer/tokenizer.h"

namespace llmwb {

struct StopDecision {
  FinishReason reason = FinishReason::Stop;
  std::string stop_reason;   // "eos" or the stop string that matched; empty for Length
};

class OutputProcessor {
 public:
  explicit OutputProcessor(const Tokenizer& tok) : tok_(tok) {}
  // Appends `token` to s (id, probability, text) and says whether s stops here.
  // from_draft: a speculative guess the target accepted (marked in token_from_draft).
  std::optional<StopDecision> append(Request& r, SeqState& s, int token, float prob, bool from_draft = false) const;
  // Ends s's text: bytes the detokenizer holds are flushed, unless a stop string cut the text.
  void close(SeqState& s, FinishReason why, const std::string& stop_reason) const;
  // The request's output now, each sample's delta being its text since the previous call.
  RequestOutput make_output(Request& r) const;

 private:
  const Tokenizer& tok_;
};

}  // namespace llmwb
