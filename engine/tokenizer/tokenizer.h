// tokenizer.h — text <-> token ids, SentencePiece semantics (Llama family).
//
// Two implementations: SpTokenizer wraps libsentencepiece for .model files; BpeTokenizer
// runs SentencePiece's BPE-by-score with byte fallback over a vocabulary and scores carried
// by a GGUF file or a llama2.c tokenizer .bin. Both give the same ids for the same vocabulary.
#pragma once

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

  // Encodes text without BOS/EOS. Like SentencePiece with add_dummy_prefix: a non-empty text
  // gets a leading space ("▁"), spaces become "▁", unknown bytes fall back to <0xNN> tokens.
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
  virtual std::string kind() const = 0;        // "sentencepiece", "llama-bpe"

  int bos_id() const { return bos_id_; }
  int eos_id() const { return eos_id_; }
  int unk_id() const { return unk_id_; }

  // Bytes this token adds to the text when it follows `prev_id` (-1: none): "▁" -> ' ',
  // <0xNN> -> that byte, control tokens -> "". As SentencePiece and llama2.c decode, the
  // leading space of the first piece after BOS (or at the very start) is dropped.
  std::string token_bytes(int id, int prev_id) const;
  // The whole text of a sequence of ids (may end inside a UTF-8 character).
  std::string decode(const std::vector<int>& ids) const;
  // A readable label for a token chip: the piece with ▁ shown as a space, bytes as \xNN.
  std::string display(int id) const;

 protected:
  // Implementations call this once their vocabulary and ids are set: it collects the control
  // pieces that encode_with_special recognizes (longest first).
  void index_special_pieces();

  int bos_id_ = 1, eos_id_ = 2, unk_id_ = 0;
  std::vector<std::pair<std::string, int>> special_pieces_;
};

// A SentencePiece .model (libsentencepiece). Throws llmwb::Error(path, ...) on failure.
std::unique_ptr<Tokenizer> load_sentencepiece(const std::string& path);
// A llama2.c tokenizer .bin (int32 max length; per piece: float score, int32 len, bytes).
// Needs the vocabulary size, which the .bin does not store. Throws llmwb::Error(path, ...).
std::unique_ptr<Tokenizer> load_llama2c_tokenizer(const std::string& path, int vocab_size);
// BPE over the vocabulary a model file carries.
std::unique_ptr<Tokenizer> make_bpe_tokenizer(const TokenizerData& data);
// Picks the tokenizer for a model: the explicit path if given (.model or llama2.c .bin),
// else the one inside the file, else a tokenizer.model beside it. Throws when the
// vocabulary size differs from the model's, naming both files and both sizes.
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
