// byte_level_bpe_tokenizer.h — byte-level BPE (GPT-2 style: Llama 3, Qwen2, Qwen2.5, Qwen3)
// over a vocabulary with ranked merges, from a GGUF ("gpt2") or a Hugging Face tokenizer.json.
//
// Encoding follows Hugging Face's tokenizers (which transformers.js and llama.cpp reproduce):
//   1. added tokens: the text of user-defined added tokens (Qwen's <think>) becomes their
//      ids; control tokens too, but only through encode_with_special;
//   2. normalization: ill-formed UTF-8 -> U+FFFD per maximal subpart; NFC where the
//      tokenizer asks for it (Qwen2);
//   3. pre-tokenization: the pre-tokenizer's regex splits the text into words (PCRE2);
//   4. BPE within each word (Sennrich et al. 2016, with GPT-2's byte-level alphabet,
//      Radford et al. 2019): start from one symbol per byte and repeatedly merge the
//      adjacent pair with the lowest merge rank (ties: leftmost), with a priority queue over
//      a linked list of symbols, O(n log n) in the word's length. With ignore_merges
//      (Llama 3), a word that is itself a piece is that piece.
// The vocabulary is indexed by the bytes a piece stands for, so words are looked up and
// merged without spelling them in GPT-2's alphabet.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/pre_tokenizer_regex.h"
#include "tokenizer/tokenizer.h"

namespace llmwb {

class ByteLevelBpeTokenizer : public Tokenizer {
 public:
  // Throws llmwb::Error(data.source, ...): an empty vocabulary, an unknown pre-tokenizer or
  // normalizer, a byte without its piece, a malformed merge or one naming an unknown piece,
  // types of another length, special ids outside the vocabulary.
  explicit ByteLevelBpeTokenizer(const TokenizerData& data);

  std::vector<int> encode(std::string_view text) const override;
  int vocab_size() const override { return static_cast<int>(pieces_.size()); }
  const std::string& piece(int id) const override;
  bool is_control(int id) const override;
  bool is_byte(int) const override { return false; }
  std::string kind() const override { return "byte-level BPE (" + pre_ + ")"; }
  std::string token_bytes(int id, int prev_id) const override;
  std::string display(int id) const override;

  const std::string& pre() const { return pre_; }
  bool regex_jit() const { return regex_->jit(); }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Merge {
    int rank;
    int result;
  };
  static uint64_t pair_key(int left, int right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }

  // Ids of one word (bytes of valid UTF-8 text) appended to `out`.
  void encode_word(std::string_view word, std::vector<int>* out) const;
  // Ids of a stretch of text without added tokens.
  void encode_text(std::string_view text, std::vector<int>* out) const;

  std::string pre_;
  bool ignore_merges_ = false;
  bool nfc_ = false;
  std::vector<std::string> pieces_;
  std::vector<int8_t> types_;
  std::vector<std::string> bytes_;   // what each token stands for (added tokens: their text)
  std::unordered_map<std::string, int, Hash, std::equal_to<>> ids_by_bytes_;   // normal pieces
  std::unordered_map<uint64_t, Merge> merges_;   // (left id, right id) -> rank, merged id
  std::array<int, 256> byte_ids_{};
  std::vector<std::pair<std::string, int>> user_defined_;   // longest first
  std::array<bool, 256> user_defined_first_byte_{};
  std::unique_ptr<PreTokenizerRegex> regex_;
};

}  // namespace llmwb
