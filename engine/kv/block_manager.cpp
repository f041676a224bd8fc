// block_manager.cpp — PagedAttention block tables, reference counts, copy-on-write and
// vLLM-v1-style automatic prefix caching (see block_manager.h for the contract).
//
// Every physical block is in exactly one of three states:
//   used      ref > 0 (held by one or more block tables; may also be hashed),
//   cached    ref == 0 and hashed: sits in the evictable LRU list, still findable by hash,
//   free      ref == 0 and unhashed: sits in the free list.
// Allocation takes the free list first (the most recently freed block first) and only then
// evicts the least recently released cached block, so cached prefixes survive as long as
// memory allows.
#include "kv/block_manager.h"

#include <algorithm>
#include <cstddef>
#include <deque>
#include <list>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "kv/block_hash.h"
#include "llmwb/errors.h"

namespace llmwb {

namespace {

int ceil_div(int a, int b) { return (a + b - 1) / b; }

}  // namespace

struct BlockManager::Impl {
  struct Block {
    int ref = 0;
    bool hashed = false;
    uint64_t hash = 0;
    uint64_t parent_hash = 0;  // kept to make lookups exact, not just probable
    std::vector<int> tokens;   // the block's token ids while hashed
    bool in_lru = false;
    std::list<int>::iterator lru_pos;
  };

  int block_size = 0;
  bool prefix_caching = false;
  std::vector<Block> blocks;
  std::deque<int> free_list;                // ref 0, unhashed
  std::list<int> lru;                       // ref 0, hashed; front = evicted first
  std::unordered_map<uint64_t, int> index;  // hash -> the first block registered with it
  // Per sequence: hashes of its leading full computed blocks (a memo; tokens never change
  // once computed, so the chain only grows). Dropped on release.
  std::unordered_map<uint64_t, std::vector<uint64_t>> chains;

  int num_free() const { return static_cast<int>(free_list.size()); }
  int num_cached() const { return static_cast<int>(lru.size()); }
  int available() const { return num_free() + num_cached(); }

  // The block registered under `hash` if it holds exactly these tokens after `parent`.
  int lookup(uint64_t hash, uint64_t parent, const int* tokens) const {
    auto it = index.find(hash);
    if (it == index.end()) return -1;
    const Block& b = blocks[it->second];
    if (b.parent_hash != parent || !std::equal(b.tokens.begin(), b.tokens.end(), tokens)) {
      return -1;  // a 64-bit collision: treat as a miss rather than reuse foreign K/V
    }
    return it->second;
  }

  // Physical blocks holding seq's cached prefix, capped so at least one token is left to
  // compute (its logits are what the next step samples from).
  std::vector<int> find_prefix(const Sequence& seq) const {
    std::vector<int> found;
    if (!prefix_caching || seq.num_tokens() == 0) return found;
    const int max_blocks = (seq.num_tokens() - 1) / block_size;
    uint64_t parent = kRootBlockHash;
    for (int i = 0; i < max_blocks; ++i) {
      const int* toks = seq.tokens.data() + static_cast<size_t>(i) * block_size;
      const uint64_t h = hash_block_tokens(parent, toks, block_size);
      const int b = lookup(h, parent, toks);
      if (b < 0) break;
      found.push_back(b);
      parent = h;
    }
    return found;
  }

  // Whether appending num_new tokens to seq must first copy the block they start in.
  bool needs_copy(const Sequence& seq, int num_new) const {
    if (num_new <= 0) return false;
    const size_t idx = static_cast<size_t>(seq.num_computed_tokens / block_size);
    return idx < seq.block_table.size() && blocks[seq.block_table[idx]].ref > 1;
  }

  int blocks_to_grow(const Sequence& seq, int num_new) const {
    const int need = ceil_div(seq.num_computed_tokens + num_new, block_size);
    return std::max(0, need - static_cast<int>(seq.block_table.size()));
  }

  void take_from_lru(int b) {
    Block& blk = blocks[b];
    lru.erase(blk.lru_pos);
    blk.in_lru = false;
  }

  void unregister(int b) {
    Block& blk = blocks[b];
    auto it = index.find(blk.hash);
    if (it != index.end() && it->second == b) index.erase(it);
    blk.hashed = false;
    blk.hash = blk.parent_hash = 0;
    blk.tokens.clear();
  }

  // A block with ref 1 for a new owner. The caller checked available() first.
  int allocate() {
    int b;
    if (!free_list.empty()) {
      b = free_list.front();
      free_list.pop_front();
    } else {
      b = lru.front();
      take_from_lru(b);
      unregister(b);  // evicted: its K/V is about to be overwritten
    }
    blocks[b].ref = 1;
    return b;
  }

  void drop_ref(int b) {
    Block& blk = blocks[b];
    if (--blk.ref > 0) return;
    if (blk.hashed) {
      blk.lru_pos = lru.insert(lru.end(), b);
      blk.in_lru = true;
    } else {
      // Reused first (a stack): its pages are resident and warm, and blocks never written stay
      // untouched, so resident KV memory follows the peak use rather than cycling through the
      // whole pool (first touches cost page faults in the middle of a step).
      free_list.push_front(b);
    }
  }

  // Tokens written into logical block `i` of seq.
  int filled_in(const Sequence& seq, int i) const {
    return std::clamp(seq.num_computed_tokens - i * block_size, 0, block_size);
  }
};

BlockManager::BlockManager(int num_blocks, int block_size, bool enable_prefix_caching)
    : impl_(std::make_shared<Impl>()) {
  if (num_blocks <= 0) {
    throw Error("BlockManager", "num_blocks must be positive, got " + std::to_string(num_blocks));
  }
  if (block_size <= 0) {
    throw Error("BlockManager", "block_size must be positive, got " + std::to_string(block_size));
  }
  impl_->block_size = block_size;
  impl_->prefix_caching = enable_prefix_caching;
  impl_->blocks.resize(static_cast<size_t>(num_blocks));
  for (int b = 0; b < num_blocks; ++b) impl_->free_list.push_back(b);
}

int BlockManager::num_blocks() const { return static_cast<int>(impl_->blocks.size()); }
int BlockManager::block_size() const { return impl_->block_size; }
int BlockManager::num_available_blocks() const { return impl_->available(); }

int BlockManager::count_cached_prefix(const Sequence& seq) const {
  return static_cast<int>(impl_->find_prefix(seq).size()) * impl_->block_size;
}

bool BlockManager::can_append(const Sequence& seq, int num_new_tokens) const {
  const Impl& m = *impl_;
  if (seq.block_table.empty() && seq.num_computed_tokens == 0) {
    const std::vector<int> prefix = m.find_prefix(seq);
    const int k = static_cast<int>(prefix.size());
    // Taking a cached prefix block with ref 0 removes it from the available pool.
    const int evictable_taken = static_cast<int>(
        std::count_if(prefix.begin(), prefix.end(), [&](int b) { return m.blocks[b].ref == 0; }));
    const int need = ceil_div(k * m.block_size + num_new_tokens, m.block_size) - k;
    return need <= m.available() - evictable_taken;
  }
  return m.blocks_to_grow(seq, num_new_tokens) + (m.needs_copy(seq, num_new_tokens) ? 1 : 0) <=
         m.available();
}

int BlockManager::acquire_prefix(Sequence& seq) {
  Impl& m = *impl_;
  if (!seq.block_table.empty()) {
    throw Error("sequence " + std::to_string(seq.seq_id),
                "acquire_prefix needs a sequence without blocks");
  }
  const std::vector<int> prefix = m.find_prefix(seq);
  for (int b : prefix) {
    if (m.blocks[b].ref == 0) m.take_from_lru(b);
    ++m.blocks[b].ref;
    seq.block_table.push_back(b);
  }
  const int cached = static_cast<int>(prefix.size()) * m.block_size;
  seq.num_computed_tokens = cached;
  seq.num_cached_tokens = cached;
  return cached;
}

bool BlockManager::append_slots(Sequence& seq, int num_new_tokens, std::vector<BlockCopy>* copies) {
  Impl& m = *impl_;
  if (num_new_tokens <= 0) return true;
  const bool copy = m.needs_copy(seq, num_new_tokens);
  const int grow = m.blocks_to_grow(seq, num_new_tokens);
  if (grow + (copy ? 1 : 0) > m.available()) return false;
  if (copy) {
    // Copy-on-write (PagedAttention §4.4): the shared block keeps serving its other owners;
    // this sequence writes into a private copy of it from here on.
    const size_t idx = static_cast<size_t>(seq.num_computed_tokens / m.block_size);
    const int src = seq.block_table[idx];
    const int dst = m.allocate();
    m.drop_ref(src);  // ref was > 1, so src stays used
    seq.block_table[idx] = dst;
    if (copies) copies->push_back(BlockCopy{src, dst});
  }
  for (int i = 0; i < grow; ++i) seq.block_table.push_back(m.allocate());
  return true;
}

void BlockManager::commit_computed(const Sequence& seq) {
  Impl& m = *impl_;
  if (!m.prefix_caching) return;
  const int full =
      std::min(seq.num_computed_tokens / m.block_size, static_cast<int>(seq.block_table.size()));
  std::vector<uint64_t>& chain = m.chains[seq.seq_id];
  for (int i = static_cast<int>(chain.size()); i < full; ++i) {
    const uint64_t parent = i == 0 ? kRootBlockHash : chain[static_cast<size_t>(i) - 1];
    const int* toks = seq.tokens.data() + static_cast<size_t>(i) * m.block_size;
    const uint64_t h = hash_block_tokens(parent, toks, m.block_size);
    chain.push_back(h);
    Impl::Block& blk = m.blocks[seq.block_table[static_cast<size_t>(i)]];
    if (blk.hashed) continue;        // came from the prefix cache or a fork: registered
    if (m.index.count(h)) continue;  // an identical block is registered: keep the first
    blk.hashed = true;
    blk.hash = h;
    blk.parent_hash = parent;
    blk.tokens.assign(toks, toks + m.block_size);
    m.index.emplace(h, seq.block_table[static_cast<size_t>(i)]);
  }
}

void BlockManager::trim(Sequence& seq) {
  Impl& m = *impl_;
  const size_t keep = static_cast<size_t>(ceil_div(seq.num_computed_tokens, m.block_size));
  while (seq.block_table.size() > keep) {
    m.drop_ref(seq.block_table.back());
    seq.block_table.pop_back();
  }
}

void BlockManager::fork(const Sequence& parent, Sequence& child) {
  Impl& m = *impl_;
  if (!child.block_table.empty()) release(child);
  child.block_table = parent.block_table;
  for (int b : child.block_table) ++m.blocks[b].ref;
  child.num_computed_tokens = parent.num_computed_tokens;
  auto it = m.chains.find(parent.seq_id);
  if (it != m.chains.end()) m.chains[child.seq_id] = it->second;
}

void BlockManager::release(Sequence& seq) {
  Impl& m = *impl_;
  // Last block first: among blocks released together, a sequence's tail is the least likely
  // to be shared by a later prompt, so it is evicted first (as vLLM v1 frees in reverse).
  for (auto it = seq.block_table.rbegin(); it != seq.block_table.rend(); ++it) m.drop_ref(*it);
  seq.block_table.clear();
  m.chains.erase(seq.seq_id);
}

void BlockManager::fill_telemetry(const std::vector<const Sequence*>& live,
                                  StepTelemetry& t) const {
  const Impl& m = *impl_;
  const int n = num_blocks();
  t.block_size = m.block_size;
  t.blocks_total = n;
  t.blocks.assign(static_cast<size_t>(n), BlockState{});
  int used = 0;
  for (int b = 0; b < n; ++b) {
    const Impl::Block& blk = m.blocks[static_cast<size_t>(b)];
    BlockState& s = t.blocks[static_cast<size_t>(b)];
    s.ref_count = blk.ref;
    s.cached = blk.hashed;
    if (blk.ref == 0 && blk.hashed) s.filled = m.block_size;  // cached blocks are full
    if (blk.ref > 0) ++used;
  }
  t.blocks_used = used;
  t.blocks_cached = m.num_cached();
  t.blocks_free = m.num_free();
  // Slots are counted per physical block: a block shared by several sequences (fork or
  // prefix hit) occupies memory once, so it counts once; its fill is the most any owner wrote.
  std::vector<char> held(static_cast<size_t>(n), 0);
  for (const Sequence* seq : live) {
    for (size_t i = 0; i < seq->block_table.size(); ++i) {
      const int b = seq->block_table[i];
      BlockState& s = t.blocks[static_cast<size_t>(b)];
      if (!held[static_cast<size_t>(b)]) {
        held[static_cast<size_t>(b)] = 1;
        s.owner = static_cast<int64_t>(seq->request_id);
      }
      s.filled = std::max(s.filled, m.filled_in(*seq, static_cast<int>(i)));
    }
  }
  t.slots_allocated = 0;
  t.slots_filled = 0;
  for (int b = 0; b < n; ++b) {
    if (!held[static_cast<size_t>(b)]) continue;
    t.slots_allocated += static_cast<uint64_t>(m.block_size);
    t.slots_filled += static_cast<uint64_t>(t.blocks[static_cast<size_t>(b)].filled);
  }
}

std::string BlockManager::check_invariants(const std::vector<const Sequence*>& live) const {
  const Impl& m = *impl_;
  const int n = num_blocks();
  auto block_name = [](int b) { return "block " + std::to_string(b); };

  std::vector<int> refs(static_cast<size_t>(n), 0);
  for (const Sequence* seq : live) {
    const std::string who = "sequence " + std::to_string(seq->seq_id);
    std::unordered_set<int> seen;
    for (int b : seq->block_table) {
      if (b < 0 || b >= n) return who + ": block id " + std::to_string(b) + " out of range";
      if (!seen.insert(b).second) return who + ": holds " + block_name(b) + " twice";
      ++refs[static_cast<size_t>(b)];
    }
    if (static_cast<int>(seq->block_table.size()) <
        ceil_div(seq->num_computed_tokens, m.block_size)) {
      return who + ": " + std::to_string(seq->num_computed_tokens) + " computed tokens but only " +
             std::to_string(seq->block_table.size()) + " blocks";
    }
  }

  std::vector<char> in_free(static_cast<size_t>(n), 0);
  for (int b : m.free_list) {
    if (in_free[static_cast<size_t>(b)]) return block_name(b) + ": twice in the free list";
    in_free[static_cast<size_t>(b)] = 1;
  }
  int lru_count = 0;
  for (int b : m.lru) {
    ++lru_count;
    if (!m.blocks[static_cast<size_t>(b)].in_lru) return block_name(b) + ": in LRU, not marked";
  }
  if (lru_count != static_cast<int>(m.lru.size())) return "LRU size mismatch";

  int used = 0, cached = 0, free = 0;
  for (int b = 0; b < n; ++b) {
    const Impl::Block& blk = m.blocks[static_cast<size_t>(b)];
    if (blk.ref != refs[static_cast<size_t>(b)]) {
      return block_name(b) + ": ref count " + std::to_string(blk.ref) + " but held by " +
             std::to_string(refs[static_cast<size_t>(b)]) + " block tables";
    }
    const bool f = in_free[static_cast<size_t>(b)];
    if (blk.ref > 0) {
      ++used;
      if (f || blk.in_lru) return block_name(b) + ": in use but also free or cached";
    } else if (blk.hashed) {
      ++cached;
      if (!blk.in_lru || f) return block_name(b) + ": cached but not (only) in the LRU list";
    } else {
      ++free;
      if (!f || blk.in_lru) return block_name(b) + ": free but not (only) in the free list";
    }
    if (blk.hashed) {
      if (!m.prefix_caching) return block_name(b) + ": hashed with prefix caching off";
      auto it = m.index.find(blk.hash);
      if (it == m.index.end() || it->second != b) return block_name(b) + ": hashed, not indexed";
      if (static_cast<int>(blk.tokens.size()) != m.block_size) {
        return block_name(b) + ": hashed with " + std::to_string(blk.tokens.size()) + " tokens";
      }
      if (hash_block_tokens(blk.parent_hash, blk.tokens.data(), m.block_size) != blk.hash) {
        return block_name(b) + ": stored hash does not match its tokens";
      }
    }
  }
  if (used + cached + free != n) {
    return "used " + std::to_string(used) + " + cached " + std::to_string(cached) + " + free " +
           std::to_string(free) + " != total " + std::to_string(n);
  }
  if (free != m.num_free() || cached != m.num_cached()) return "free/LRU list sizes disagree";
  for (const auto& [h, b] : m.index) {
    const Impl::Block& blk = m.blocks[static_cast<size_t>(b)];
    if (!blk.hashed || blk.hash != h) return "index entry for " + block_name(b) + " is stale";
  }
  return "";
}

}  // namespace llmwb
