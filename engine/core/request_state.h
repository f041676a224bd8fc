// request_state.h — the engine's state of one request (vLLM's parent request) and of each of its
// n sampled sequences: the Sequence the scheduler moves, its RNG stream, its detokenizer and the
// output built so far.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "llmwb/outputs.h"
#include "llmwb/sampling_params.h"
#include "sample/rng.h"
#include "spec/draft_length.h"
#include "request/sequence.h"
#include "tokenizer/tokenizer.h"

namespace llmwb {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct SeqState {
  std::unique_ptr<Sequence> seq;
  Rng rng;
  std::unique_ptr<IncrementalDetokenizer> detok;
  CompletionOutput out;
  size_t emitted = 0;   // bytes of out.text already reported as deltas
  bool done = false;
  // Sample k > 0 of an n > 1 request before it forks from sample 0 (not in the scheduler yet).
  bool pending = false;
  // Speculative decoding: how many tokens this sequence drafts next, and the distributions its
  // guesses of this step were drawn from (empty for a deterministic proposer).
  DraftLength draft_length;
  std::vector<float> draft_q;
  bool draft_doubted = false;   // this step's draft stopped after a guess it doubted (DraftSlot::doubted)
  int pause_at = -1;    // step_request: pause again once this many tokens are generated
};

struct Request {
  uint64_t id = 0;
  std::string prompt;
  std::vector<int> prompt_ids;
  SamplingParams params;
  std::vector<std::unique_ptr<SeqState>> seqs;   // the n samples, sample 0 first
  bool forked = false;
  Clock::time_point t_added;
  double t_first = -1, t_done = 0;
  bool changed = false;
  bool reported_finished = false;
  bool paused = false;
  std::string error;

  // Sample 0 of an n > 1 request whose prompt is not forked yet (it forks when its prompt's
  // logits are sampled, so the n samples share the prompt's KV blocks).
  bool forks_at(const SeqState& s) const { return params.n > 1 && !forked && s.seq->sample_index == 0; }
};

}  // namespace llmwb
