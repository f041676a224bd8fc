// model_proposer.h — guesses from a draft model run by a ModelRunner: k autoregressive steps of
// the draft for every speculating sequence at once (one batch per step), sampled with the
// request's own sampler stages so that q matches what the verifier assumes.
//
// KV: the draft's pool mirrors the target's block pool (same number of blocks, same block
// tables), so the BlockManager's accounting covers both and a rejected guess is rolled back by
// the same trim. A draft of its own (draft_model, self_int4) catches up on the tokens it has
// not seen (the prompt, the tokens the target emitted) in its first step. The layers:K draft
// runs the target itself with an early exit and writes into the target's pool: its first K
// layers' K/V of every accepted token are the target's, so it never catches up.
#pragma once

#include <map>
#include <memory>

#include "format/model_file.h"
#include "runner/model_runner.h"
#include "sample/sampler.h"
#include "spec/proposer.h"

namespace llmwb {

class ModelProposer final : public Proposer {
 public:
  // A draft with a runner (and file) of its own; its KV pool is allocated by the caller.
  ModelProposer(std::string name, std::unique_ptr<ModelFile> file, std::unique_ptr<ModelRunner> runner);
  // The target's own runner, run for its first `exit_layers` layers over its own KV pool.
  ModelProposer(std::string name, ModelRunner& target, int vocab, int exit_layers);

  // Stop a sequence's guesses at the first one the draft gives less than p probability
  // (SpeculativeConfig::draft_p_min); 0 = always guess k.
  void set_p_min(float p) { p_min_ = p; }
  double draft_p_min() const override { return p_min_; }
  int last_passes() const override { return last_passes_; }

  std::string name() const override { return name_; }
  void propose(std::span<DraftSlot> slots) override;
  void copy_blocks(std::span<const BlockCopy> copies) override;
  void rollback(const Sequence& seq) override;
  void forget(uint64_t seq_id) override { computed_.erase(seq_id); }

 private:
  // The guess from one row of draft logits, appended to the slot (and its q where sampled);
  // returns the probability the draft gave it.
  float choose(DraftSlot& s, float* row);

  std::string name_;
  std::unique_ptr<ModelFile> file_;
  std::unique_ptr<ModelRunner> own_;
  ModelRunner& runner_;
  int vocab_ = 0;
  int exit_layers_ = 0;
  int last_passes_ = 0;
  float p_min_ = 0.f;
  bool shares_kv_ = false;
  std::map<uint64_t, int> computed_;   // seq_id -> leading tokens whose K/V the draft pool holds
  Sampler sampler_;
  std::vector<float> logits_, probs_;
  std::vector<int> history_;
};

}  // namespace llmwb
