// bpe_tokenizer.h — SentencePiece's BPE encoding over a vocabulary carried by a model file
// (GGUF tokenizer.ggml.*) or a llama2.c tokenizer .bin, without libsentencepiece.
//
// The algorithm is SentencePiece's bpe_model.cc Encode (Sennrich et al. 2016, "Neural
// Machine Translation of Rare Words with Subword Units", with merges ranked by piece score
// instead of a merge list): normalize the text (identity normalizer, "▁" dummy prefix,
// ' ' -> "▁"), split it into characters (user-defined pieces stay whole), then repeatedly
// merge the adjacent pair whose concatenation is a piece with the highest score (ties: the
// leftmost pair). A priority queue of candidate pairs over a linked list of symbols makes
// this O(n log n). Characters left without a piece fall back to <0xNN> byte tokens.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace llmwb {

class BpeTokenizer : public Tokenizer {
 public:
  // Throws llmwb::Error(data.source, ...) when the vocabulary is empty or inconsistent
  // (scores/types of another length, a NaN score, BOS/EOS outside the vocabulary).
  explicit BpeTokenizer(const TokenizerData& data);
  BpeTokenizer(const BpeTokenizer&) = delete;
  BpeTokenizer& operator=(const BpeTokenizer&) = delete;

  std::vector<int> encode(std::string_view text) const override;
  int vocab_size() const override { return static_cast<int>(pieces_.size()); }
  const std::string& piece(int id) const override;
  bool is_control(int id) const override;
  bool is_byte(int id) const override;
  std::string kind() const override { return "llama-bpe"; }

  float score(int id) const { return scores_[static_cast<size_t>(id)]; }
  // SentencePiece / GGUF token type (1 normal, 2 unknown, 3 control, 4 user defined,
  // 5 unused, 6 byte), inferred from the piece when the source carried none.
  int type(int id) const { return types_[static_cast<size_t>(id)]; }

 private:
  // Hash and equality that let a std::string_view look up std::string keys without a copy.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using PieceMap = std::unordered_map<std::string, int, Hash, std::equal_to<>>;

  int find(std::string_view piece) const;  // -1 when absent
  void append_piece(std::string_view piece, std::vector<int>* out) const;

  std::vector<std::string> pieces_;
  std::vector<float> scores_;
  std::vector<int8_t> types_;
  PieceMap ids_;                        // piece -> first id with that text
  std::array<int, 256> byte_ids_{};     // byte value -> <0xNN> id, or -1
  std::vector<std::string> user_defined_;  // matched whole before merging, longest first
};

}  // namespace llmwb
