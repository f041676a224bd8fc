// block_hash.h — the identity of a full KV block for automatic prefix caching.
//
// As in vLLM's hash-based prefix caching, a block's hash covers its own token ids and, through
// `parent`, every block before it: hash(block i) = H(hash(block i-1), tokens of block i). Two
// blocks with equal hashes therefore hold K/V for the same token prefix. H is a 64-bit mix in
// the style of xxHash64's lane rounds (multiply by odd primes, rotate) finished with the
// splitmix64 avalanche (Steele et al., "Fast splittable pseudorandom number generators",
// OOPSLA 2014), so every input bit reaches every output bit. The block manager also compares
// the stored token ids on lookup, so a collision can never hand out the wrong K/V.
#pragma once

#include <cstdint>

namespace llmwb {

// The parent hash of a sequence's first block.
inline constexpr uint64_t kRootBlockHash = 0x5bd1e9955bd1e995ULL;

inline uint64_t splitmix64_finalize(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

inline uint64_t hash_block_tokens(uint64_t parent, const int* tokens, int count) {
  constexpr uint64_t kPrime1 = 0x9e3779b185ebca87ULL;  // xxHash64 PRIME64_1
  constexpr uint64_t kPrime2 = 0xc2b2ae3d27d4eb4fULL;  // xxHash64 PRIME64_2
  constexpr uint64_t kPrime4 = 0x85ebca77c2b2ae63ULL;  // xxHash64 PRIME64_4
  uint64_t h = splitmix64_finalize(parent ^ kPrime2) + static_cast<uint64_t>(count);
  for (int i = 0; i < count; ++i) {
    const uint64_t lane = static_cast<uint64_t>(static_cast<uint32_t>(tokens[i])) * kPrime2;
    h ^= (lane << 31 | lane >> 33) * kPrime1;
    h = (h << 27 | h >> 37) * kPrime1 + kPrime4;
  }
  return splitmix64_finalize(h);
}

}  // namespace llmwb
