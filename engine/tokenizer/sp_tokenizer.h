// sp_tokenizer.h — a SentencePiece .model through libsentencepiece (the reference
// implementation: Kudo & Richardson 2018, "SentencePiece: A simple and language independent
// subword tokenizer and detokenizer for Neural Text Processing").
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace llmwb {

class SpTokenizer : public Tokenizer {
 public:
  // Throws llmwb::Error(path, ...) when the file cannot be read or is not a SentencePiece model.
  explicit SpTokenizer(const std::string& path);
  ~SpTokenizer() override;

  std::vector<int> encode(std::string_view text) const override;
  int vocab_size() const override { return vocab_size_; }
  const std::string& piece(int id) const override;
  bool is_control(int id) const override;  // control or unknown pieces
  bool is_byte(int id) const override;
  std::string kind() const override { return "sentencepiece"; }

  float score(int id) const;
  // SentencePiece / GGUF token type (1 normal, 2 unknown, 3 control, 4 user defined,
  // 5 unused, 6 byte), e.g. to build a TokenizerData from a .model file.
  int type(int id) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  int vocab_size_ = 0;
};

}  // namespace llmwb
