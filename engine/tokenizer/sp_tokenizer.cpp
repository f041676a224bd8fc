#include "tokenizer/sp_tokenizer.h"

#include <sentencepiece_processor.h>

#include <filesystem>

#include "llmwb/errors.h"

namespace llmwb {

SpTokenizer::SpTokenizer(const std::string& path)
    : path_(path), sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw Error(path, "no such SentencePiece model file");
  const auto status = sp_->Load(path);
  if (!status.ok()) throw Error(path, "not a readable SentencePiece model (" + status.ToString() + ")");
  vocab_size_ = sp_->GetPieceSize();
  if (vocab_size_ <= 0) throw Error(path, "the SentencePiece model has no pieces");
  // A model may define no BOS/EOS (id -1); the Llama convention 1/2 is the fallback.
  if (sp_->bos_id() >= 0) bos_id_ = sp_->bos_id();
  if (sp_->eos_id() >= 0) eos_id_ = sp_->eos_id();
  if (sp_->unk_id() >= 0) unk_id_ = sp_->unk_id();
  index_special_pieces();
}

SpTokenizer::~SpTokenizer() = default;

std::vector<int> SpTokenizer::encode(std::string_view text) const {
  std::vector<int> ids;
  // Encode only fails on an unloaded model, which the constructor rules out.
  sp_->Encode(text, &ids).IgnoreError();
  return ids;
}

const std::string& SpTokenizer::piece(int id) const {
  static const std::string kNone;
  return id >= 0 && id < vocab_size_ ? sp_->IdToPiece(id) : kNone;
}

bool SpTokenizer::is_control(int id) const {
  return id >= 0 && id < vocab_size_ && (sp_->IsControl(id) || sp_->IsUnknown(id));
}

bool SpTokenizer::is_byte(int id) const { return id >= 0 && id < vocab_size_ && sp_->IsByte(id); }

float SpTokenizer::score(int id) const { return id >= 0 && id < vocab_size_ ? sp_->GetScore(id) : 0.0f; }

int SpTokenizer::type(int id) const {
  if (id < 0 || id >= vocab_size_) return 0;
  if (sp_->IsUnknown(id)) return 2;
  if (sp_->IsControl(id)) return 3;
  if (sp_->IsUnused(id)) return 5;
  if (sp_->IsByte(id)) return 6;
  // The public API does not tell user-defined from normal pieces; neither is special when
  // decoding, and BPE merging treats them alike except that user-defined ones stay whole.
  return 1;
}

std::unique_ptr<Tokenizer> load_sentencepiece(const std::string& path) { return std::make_unique<SpTokenizer>(path); }

}  // namespace llmwb
