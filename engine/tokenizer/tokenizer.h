// tokenizer.h — text <-> token ids.
//
// Two families. SentencePiece (Llama 2, Mistral): SpTokenizer wraps libsentencepiece for
// .model files; BpeTokenizer runs SentencePiece's BPE-by-score with byte fallback over a
// vocabulary and scores carried by a GGUF file or a llama2.c tokenizer .bin. Both give the
// same ids for the same vocabulary. Byte-level BPE (Llama 3, Qwen2/3): ByteLevelBpeTokenizer
// over GGUF "gpt2" vocabularies and Hugging Face tokenizer.json files. The base class holds
// what they share: ids of special tokens, special-token parsing, end of generation, and a
// decoding interface (token_bytes) through which IncrementalDetokenizer streams either kind.
#pragma once

#include <array>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "format/model_file.h"

namespace llmwb {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Encodes text without BOS/EOS; the text of control tokens stays text. SentencePiece: a
  // non-empty text gets a leading space ("▁"), spaces become "▁", unknown bytes fall back to
  // <0xNN> tokens. Byte-level BPE: ill-formed UTF-8 becomes U+FFFD, the vocabulary's
  // user-defined added tokens (Qwen's <think>) are matched, the rest is split by the
  // pre-tokenizer regex and merged by rank.
  virtual std::vector<int> encode(std::string_view text) const = 0;
  // Like encode, but the text of a control piece ("<s>", "</s>", or "<|im_start|>" where the
  // vocabulary has it as a control token) becomes that token; the text between is encoded
  // with encode(), each stretch with its own dummy prefix, as llama.cpp and Hugging Face's
  // (legacy) Llama tokenizer do. For prompts rendered by llmwb/chat_template.h.
  std::vector<int> encode_with_special(std::string_view text) const;
  virtual int vocab_size() const = 0;
  // The raw piece: "▁the", "<0x0A>", "<s>".
  virtual const std::string& piece(int id) const = 0;
  virtual bool is_control(int id) const = 0;   // <s>, </s>, <unk>-like: contribute no text
  virtual bool is_byte(int id) const = 0;      // <0xNN>
  // "sentencepiece", "llama-bpe" (SentencePiece BPE by score), "byte-level BPE (qwen2)".
  virtual std::string kind() const = 0;

  int bos_id() const { return bos_id_; }   // -1 when the vocabulary has none (Qwen)
  int eos_id() const { return eos_id_; }
  int unk_id() const { return unk_id_; }
  // Whether a prompt starts with BOS (tokenizer.ggml.add_bos_token, add_bos_token).
  bool add_bos() const { return add_bos_ && bos_id_ >= 0; }
  // End of generation: EOS, and every token the vocabulary declares to end a turn or a
  // message (GGUF eot/eom ids; control tokens such as <|eot_id|>, <|eom_id|>,
  // <|end_of_text|>, <|im_end|>, <|endoftext|>), as llama.cpp's llama_vocab_is_eog.
  bool is_eog(int id) const;

  // Bytes this token adds to the text when it follows `prev_id` (-1: none); control tokens
  // add nothing. SentencePiece (this implementation): "▁" -> ' ', <0xNN> -> that byte, and
  // as SentencePiece and llama2.c decode, the leading space of the first piece after BOS
  // (or at the very start) is dropped. Byte-level BPE maps each character of the piece back
  // to its byte, so one token may end inside a UTF-8 character.
  virtual std::string token_bytes(int id, int prev_id) const;
  // The whole text of a sequence of ids (may end inside a UTF-8 character).
  std::string decode(const std::vector<int>& ids) const;
  // A readable label for a token chip: the text with spaces shown as spaces, bytes that are
  // not a whole printable character as \xNN, control pieces as they are ("<s>").
  virtual std::string display(int id) const;

 protected:
  // Implementations call this once their vocabulary and ids are set: it collects the control
  // pieces that encode_with_special recognizes (longest first).
  void index_special_pieces();
  // Collects the end-of-generation ids: EOS, `extra` (ids < 0 ignored), and the control
  // pieces whose text chat models use to end a turn.
  void index_end_of_generation(std::initializer_list<int> extra);

  int bos_id_ = 1, eos_id_ = 2, unk_id_ = 0;
  bool add_bos_ = true;
  std::vector<std::pair<std::string, int>> special_pieces_;
  std::array<bool, 256> special_first_byte_{};   // a special piece starts with this byte
  std::vector<int> eog_ids_;                     // sorted; EOS included once indexed
};

// A SentencePiece .model (libsentencepiece). Throws llmwb::Error(path, ...) on failure.
std::unique_ptr<Tokenizer> load_sentencepiece(const std::string& path);
// A llama2.c tokenizer .bin (int32 max length; per piece: float score, int32 len, bytes).
// Needs the vocabulary size, which the .bin does not store. Throws llmwb::Error(path, ...).
std::unique_ptr<Tokenizer> load_llama2c_tokenizer(const std::string& path, int vocab_size);
// BPE over the vocabulary a model file carries.
std::unique_ptr<Tokenizer> make_bpe_tokenizer(const TokenizerData& data);
// Byte-level BPE (model "gpt2") over a vocabulary with merges and a known pre-tokenizer.
// Throws llmwb::Error(data.source, ...) for an unknown `pre` (naming it and the supported
// ones), a merge naming a piece the vocabulary lacks, or a byte without its piece.
std::unique_ptr<Tokenizer> make_byte_level_bpe_tokenizer(const TokenizerData& data);
// The tokenizer a vocabulary describes: byte-level BPE for model "gpt2", SentencePiece-style
// BPE for "llama" (or none given); another model is an error naming it.
std::unique_ptr<Tokenizer> make_tokenizer(const TokenizerData& data);
// A tokenizer file on its own: a Hugging Face tokenizer.json or a SentencePiece .model.
std::unique_ptr<Tokenizer> load_tokenizer_file(const std::string& path);
// Picks the tokenizer for a model: the explicit path if given (.model, tokenizer.json or
// llama2.c .bin), else the one inside the file, else a tokenizer.model beside it. A
// byte-level vocabulary smaller than the model's embedding is padded (Qwen's 151,936 rows
// for 151,669 tokens). Throws when the vocabulary is larger than the model's, or of
// another size for SentencePiece, naming both files and both sizes.
std::unique_ptr<Tokenizer> load_tokenizer_for(const ModelFile& model, const std::string& explicit_path);

// Streams text out of token ids without ever emitting half a UTF-8 character: bytes of an
// incomplete sequence are held until the character completes (or flush() at the end).
class IncrementalDetokenizer {
 public:
  explicit IncrementalDetokenizer(const Tokenizer& tok, int prev_id = -1) : tok_(tok), prev_(prev_id) {}
  // Returns the newly completed text (possibly empty).
  std::string push(int id);
  // Returns whatever is held (invalid bytes replaced by U+FFFD).
  std::string flush();

 private:
  const Tokenizer& tok_;
  int prev_;
  std::string pending_;
};

}  // namespace llmwb
