// block_manager.h — PagedAttention's memory manager (Kwon et al., SOSP 2023, §4.2-4.4).
//
// The KV cache is a pool of `num_blocks` fixed-size physical blocks of `block_size` token
// slots. Each sequence's block table maps its logical blocks to physical ones; blocks are
// taken on demand as tokens are appended and given back when a sequence finishes, is aborted
// or preempted. Blocks are reference counted: forked samples share their prompt's blocks, and
// appending to a shared, partly filled block copies it first (copy-on-write).
//
// Automatic prefix caching (vLLM's hash-based design): a full block is identified by
// hash(previous block's hash, its token ids). When its last owner lets it go, a hashed block
// stays cached (evictable, least recently used first) and a later sequence whose tokens start
// with the same blocks takes them back instead of recomputing them.
//
// The manager never touches K/V data itself; it returns block copies for the model runner.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "llmwb/telemetry.h"
#include "request/sequence.h"

namespace llmwb {

struct BlockCopy {
  int src = 0;
  int dst = 0;
};

class BlockManager {
 public:
  BlockManager(int num_blocks, int block_size, bool enable_prefix_caching);

  int num_blocks() const;
  int block_size() const;
  // Blocks that can be handed out now: free plus cached-but-unreferenced (evictable).
  int num_available_blocks() const;

  // For a sequence about to start (or restart after preemption) from num_computed_tokens == 0:
  // how many of its leading tokens have K/V in the prefix cache. A multiple of block_size, and
  // always < seq.num_tokens() so that at least one token is computed (its logits are needed).
  int count_cached_prefix(const Sequence& seq) const;

  // Whether `num_new_tokens` more tokens can be given slots (after taking cached prefix
  // blocks, for a sequence with no blocks yet).
  bool can_append(const Sequence& seq, int num_new_tokens) const;

  // For a sequence with no blocks yet: takes its cached prefix blocks (ref count +1) and sets
  // seq.num_computed_tokens = seq.num_cached_tokens = the cached token count. Returns it.
  int acquire_prefix(Sequence& seq);

  // Makes seq.block_table cover seq.num_computed_tokens + num_new_tokens slots, taking blocks
  // on demand (evicting cached ones LRU when no free block is left). If the block the first
  // new token goes into is shared (ref > 1), it is replaced by a private copy and the copy is
  // appended to *copies. Returns false and changes nothing when not enough blocks are available.
  bool append_slots(Sequence& seq, int num_new_tokens, std::vector<BlockCopy>* copies);

  // After the model wrote K/V for seq's tokens up to seq.num_computed_tokens: every newly
  // full block gets its hash and enters the prefix cache index.
  void commit_computed(const Sequence& seq);

  // Speculative decoding's rollback: drops the blocks past those holding seq's
  // num_computed_tokens (slots reserved for draft tokens the target rejected). Rejected tokens
  // were never computed tokens, so no hash was registered for them.
  void trim(Sequence& seq);

  // Parallel sampling: `child` shares all of `parent`'s blocks (ref count +1 each) and takes
  // the parent's num_computed_tokens.
  void fork(const Sequence& parent, Sequence& child);

  // Drops every block of seq (ref count -1; at 0 a hashed block becomes cached-evictable,
  // an unhashed one free). Clears seq.block_table.
  void release(Sequence& seq);

  // Fills the KV fields of a telemetry snapshot (block states, counts, slots).
  void fill_telemetry(const std::vector<const Sequence*>& live, StepTelemetry& t) const;

  // Invariants, for tests: used + cached + free == total, ref counts equal the number of
  // block tables holding each block, cached blocks have ref 0. Returns "" or a description.
  std::string check_invariants(const std::vector<const Sequence*>& live) const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace llmwb
