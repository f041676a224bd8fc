#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <filesystem>

#include "llmwb/errors.h"
#include "format/tokenizer_json.h"
#include "tokenizer/llama2c_tokenizer.h"
#include "tokenizer/utf8.h"

namespace llmwb {
namespace {

constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";  // "▁" U+2581

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string Tokenizer::token_bytes(int id, int prev_id) const {
  if (id < 0 || id >= vocab_size() || is_control(id)) return {};
  const std::string& p = piece(id);
  if (is_byte(id)) {
    // "<0xNN>" -> the byte NN (SentencePiece byte_fallback pieces).
    if (p.size() != 6) return {};
    const int hi = hex_digit(p[3]), lo = hex_digit(p[4]);
    if (hi < 0 || lo < 0) return {};
    return std::string(1, static_cast<char>(hi * 16 + lo));
  }
  std::string out;
  out.reserve(p.size());
  size_t i = 0;
  // The dummy prefix that encoding added is not part of the text (SentencePiece's decoder
  // and llama2.c both drop the leading space of the first piece after BOS).
  if ((prev_id < 0 || prev_id == bos_id_) && std::string_view(p).substr(0, 3) == kSpaceSymbol) i = 3;
  while (i < p.size()) {
    if (std::string_view(p).substr(i, 3) == kSpaceSymbol) {
      out += ' ';
      i += 3;
    } else {
      out += p[i++];
    }
  }
  return out;
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
  std::string out;
  int prev = -1;
  for (int id : ids) {
    out += token_bytes(id, prev);
    prev = id;
  }
  return out;
}

std::string Tokenizer::display(int id) const {
  static const char* kHex = "0123456789ABCDEF";
  if (id < 0 || id >= vocab_size()) return "<invalid " + std::to_string(id) + ">";
  const std::string& p = piece(id);
  if (is_byte(id) && p.size() == 6) return std::string("\\x") + p[3] + p[4];
  if (is_control(id)) return p;
  std::string out;
  for (size_t i = 0; i < p.size();) {
    const auto c = static_cast<unsigned char>(p[i]);
    if (std::string_view(p).substr(i, 3) == kSpaceSymbol) {
      out += ' ';
      i += 3;
    } else if (c < 0x20 || c == 0x7F) {  // keep a chip on one line
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
      ++i;
    } else {
      out += p[i++];
    }
  }
  return out;
}

void Tokenizer::index_special_pieces() {
  special_pieces_.clear();
  special_first_byte_.fill(false);
  for (int id = 0; id < vocab_size(); ++id) {
    // <unk> is control-like for decoding, but "<unk>" typed in a prompt stays text.
    if (id == unk_id_ || !is_control(id) || is_byte(id) || piece(id).empty()) continue;
    special_pieces_.emplace_back(piece(id), id);
    special_first_byte_[static_cast<unsigned char>(piece(id)[0])] = true;
  }
  std::stable_sort(special_pieces_.begin(), special_pieces_.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
}

void Tokenizer::index_end_of_generation(std::initializer_list<int> extra) {
  // The pieces llama.cpp's vocabulary loader adds to its end-of-generation set by name.
  static constexpr std::string_view kEndOfTurn[] = {
      "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>", "<|im_end|>", "<|endoftext|>", "<|end|>", "<end_of_turn>", "<EOT>"};
  eog_ids_.clear();
  if (eos_id_ >= 0) eog_ids_.push_back(eos_id_);
  for (int id : extra)
    if (id >= 0 && id < vocab_size()) eog_ids_.push_back(id);
  for (const auto& [text, id] : special_pieces_)
    if (std::find(std::begin(kEndOfTurn), std::end(kEndOfTurn), text) != std::end(kEndOfTurn)) eog_ids_.push_back(id);
  std::sort(eog_ids_.begin(), eog_ids_.end());
  eog_ids_.erase(std::unique(eog_ids_.begin(), eog_ids_.end()), eog_ids_.end());
}

bool Tokenizer::is_eog(int id) const {
  return id >= 0 && (id == eos_id_ || std::binary_search(eog_ids_.begin(), eog_ids_.end(), id));
}

std::vector<int> Tokenizer::encode_with_special(std::string_view text) const {
  std::vector<int> out;
  size_t start = 0;  // beginning of the text stretch not yet encoded
  auto flush_text = [&](size_t end) {
    if (end > start) {
      const std::vector<int> ids = encode(text.substr(start, end - start));
      out.insert(out.end(), ids.begin(), ids.end());
    }
  };
  for (size_t i = 0; i < text.size();) {
    if (!special_first_byte_[static_cast<unsigned char>(text[i])]) {
      ++i;
      continue;
    }
    const std::pair<std::string, int>* hit = nullptr;
    for (const auto& sp : special_pieces_) {
      if (text.substr(i, sp.first.size()) == sp.first) {
        hit = &sp;
        break;
      }
    }
    if (!hit) {
      ++i;
      continue;
    }
    flush_text(i);
    out.push_back(hit->second);
    i += hit->first.size();
    start = i;
  }
  flush_text(text.size());
  return out;
}

std::string IncrementalDetokenizer::push(int id) {
  pending_ += tok_.token_bytes(id, prev_);
  prev_ = id;
  std::string out;
  size_t i = 0;
  while (i < pending_.size()) {
    const int k = utf8::classify(pending_.data() + i, pending_.size() - i);
    if (k == 0) break;  // a character still arriving: hold its bytes
    if (k > 0) {
      out.append(pending_, i, static_cast<size_t>(k));
      i += static_cast<size_t>(k);
    } else {
      out += utf8::kReplacement;  // can never become valid: one U+FFFD per maximal subpart
      i += static_cast<size_t>(-k);
    }
  }
  pending_.erase(0, i);
  return out;
}

std::string IncrementalDetokenizer::flush() {
  // What is held is always one incomplete but well-formed prefix.
  std::string out = pending_.empty() ? std::string() : std::string(utf8::kReplacement);
  pending_.clear();
  return out;
}

std::unique_ptr<Tokenizer> make_tokenizer(const TokenizerData& data) {
  if (data.model == "gpt2") return make_byte_level_bpe_tokenizer(data);
  if (data.model.empty() || data.model == "llama") return make_bpe_tokenizer(data);
  throw Error(data.source, "tokenizer model '" + data.model + "' is not supported (llama: SentencePiece BPE, gpt2: byte-level BPE)");
}

namespace {
bool is_tokenizer_json(const std::string& path) { return std::filesystem::path(path).extension() == ".json"; }
}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer_file(const std::string& path) {
  if (is_tokenizer_json(path)) return make_byte_level_bpe_tokenizer(read_tokenizer_json(path));
  if (std::filesystem::path(path).extension() == ".model") return load_sentencepiece(path);
  throw Error(path, "is neither a tokenizer.json nor a SentencePiece .model (a llama2.c .bin needs --model)");
}

std::unique_ptr<Tokenizer> load_tokenizer_for(const ModelFile& model, const std::string& explicit_path) {
  namespace fs = std::filesystem;
  const int vocab = model.config.vocab_size;
  std::unique_ptr<Tokenizer> tok;
  std::string source;
  auto open_path = [&](const std::string& path) {
    source = path;
    if (fs::path(path).extension() == ".model") {
      tok = load_sentencepiece(path);
    } else if (is_tokenizer_json(path)) {
      TokenizerData data = read_tokenizer_json(path);
      if (vocab > 0) pad_vocabulary(&data, static_cast<size_t>(vocab));
      tok = make_byte_level_bpe_tokenizer(data);
    } else {
      TokenizerData data = read_llama2c_tokenizer(path);
      tok = make_bpe_tokenizer(data);
    }
  };

  if (!explicit_path.empty()) {
    open_path(explicit_path);
  } else if (!model.tokenizer.pieces.empty()) {
    source = model.tokenizer.source.empty() ? model.path : model.tokenizer.source;
    if (model.tokenizer.model == "gpt2" && vocab > 0 && model.tokenizer.pieces.size() < static_cast<size_t>(vocab)) {
      TokenizerData padded = model.tokenizer;
      pad_vocabulary(&padded, static_cast<size_t>(vocab));
      tok = make_tokenizer(padded);
    } else {
      tok = make_tokenizer(model.tokenizer);
    }
  } else if (!model.tokenizer.sp_model_path.empty()) {
    open_path(model.tokenizer.sp_model_path);
  } else {
    // llama2.c checkpoints carry no vocabulary; look for the usual companions beside them.
    std::error_code ec;
    const fs::path dir = fs::is_directory(model.path, ec) ? fs::path(model.path) : fs::path(model.path).parent_path();
    const std::string v = std::to_string(vocab);
    const std::vector<std::string> names = {"tokenizer.model", "tok" + v + ".model", "tokenizer.bin", "tok" + v + ".bin"};
    for (const std::string& name : names) {
      const fs::path candidate = dir / name;
      if (fs::is_regular_file(candidate, ec)) {
        open_path(candidate.string());
        break;
      }
    }
    if (!tok) {
      std::string list;
      for (size_t i = 0; i < names.size(); ++i) list += (i ? (i + 1 == names.size() ? " or " : ", ") : "") + names[i];
      throw Error(model.path, "the model carries no tokenizer and there is no " + list + " beside it; pass --tokenizer PATH");
    }
  }

  if (vocab > 0 && tok->vocab_size() != vocab)
    throw Error("tokenizer " + source + " has " + std::to_string(tok->vocab_size()) + " pieces but model " +
                model.path + " has a vocabulary of " + std::to_string(vocab));
  return tok;
}

}  // namespace llmwb
