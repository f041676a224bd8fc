// proposer.h — the cheap half of speculative decoding (Leviathan et al. 2023, §2.3): each step a
// Proposer guesses up to k next tokens for every speculating sequence; the engine's target pass
// then verifies them all at once (core/engine.cpp, spec/verifier.h). Proposers: ngram (prompt
// lookup), and a draft model run by a ModelRunner: a separate file (draft_model), the target
// quantized to INT4 (self_int4) or its first K layers (layers).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kv/block_manager.h"
#include "kv/kv_cache.h"
#include "llmwb/engine_config.h"
#include "llmwb/sampling_params.h"
#include "request/sequence.h"
#include "sample/rng.h"

namespace llmwb {

struct ModelFile;
class ModelRunner;
class Tokenizer;
struct RunnerCapabilities;

// One sequence's guesses for this step.
struct DraftSlot {
  const Sequence* seq = nullptr;   // its tokens; its block table has slots for k more
  int k = 0;                       // guess at most this many
  const SamplingParams* params = nullptr;
  Rng* rng = nullptr;              // the sequence's stream (a proposer that samples draws from it)
  std::vector<int> tokens;         // out: the guesses, at most k
  // out: the distribution each guess was drawn from (vocab floats per guess, after the same
  // sampler stages as the target's), or empty when the guesses are deterministic (q one-hot).
  std::vector<float> q;
  // out: the draft stopped after a guess it doubted (below draft_p_min): the last of `tokens`.
  bool doubted = false;
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  virtual std::string name() const = 0;
  // Fills every slot's tokens (and q), all slots in one batch where the proposer runs a model.
  virtual void propose(std::span<DraftSlot> slots) = 0;
  // Copy-on-write copies the target did this step, for a proposer with a KV pool of its own
  // (same block ids as the target's).
  virtual void copy_blocks(std::span<const BlockCopy> copies) { (void)copies; }
  // After verification: seq keeps only its num_computed_tokens, whatever was guessed past them.
  virtual void rollback(const Sequence& seq) { (void)seq; }
  // Forward passes the last propose() ran (one per guess position, fewer where every sequence
  // stopped early on a doubted guess); 0 for a proposer that runs no model (ngram's lookup).
  virtual int last_passes() const { return 0; }
  // The probability below which the next step's guesses stop (0: they never do).
  virtual double draft_p_min() const { return 0; }
  // The sequence finished, was aborted or preempted: its draft state (if any) is void.
  virtual void forget(uint64_t seq_id) { (void)seq_id; }
};

// What a proposer needs from the engine that builds it.
struct ProposerTarget {
  ModelFile* file = nullptr;               // the target model
  const Tokenizer* tokenizer = nullptr;
  ModelRunner* runner = nullptr;
  bool runner_exits_early = false;         // RunnerCapabilities::early_exit
  int num_blocks = 0, block_size = 0;      // the target's block pool (a draft's pool mirrors it)
  KVDType kv_dtype = KVDType::F32;
};

// The proposer cfg.speculative asks for, loading a draft model where it needs one. Throws
// llmwb::Error naming the field or file (a draft whose vocabulary differs from the target's
// names both files and the first differing piece).
std::unique_ptr<Proposer> make_proposer(const EngineConfig& cfg, const ProposerTarget& target);

}  // namespace llmwb
