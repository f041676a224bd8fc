#include "tokenizer/llama2c_tokenizer.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "llmwb/errors.h"
#include "tokenizer/bpe_tokenizer.h"

namespace llmwb {
namespace {

// A piece longer than this is certainly not a tokenizer piece: the file is corrupt.
constexpr int32_t kMaxPieceBytes = 1 << 16;

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

}  // namespace

TokenizerData read_llama2c_tokenizer(const std::string& path) {
  // A folder opens as a stream on Linux and then fails inside libstdc++ with a message that
  // names no path; anything but a regular file is refused here instead.
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status))
    throw Error(path, "is a folder, not a tokenizer file (a llama2.c tokenizer .bin or a SentencePiece .model)");
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
    throw Error(path, "is not a regular file, not a tokenizer file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path, std::string("cannot open the tokenizer file: ") + std::strerror(errno));
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) throw Error(path, "cannot read the tokenizer file");

  size_t at = 0;
  auto read_i32 = [&](int32_t* v) {
    if (bytes.size() - at < 4) return false;
    std::memcpy(v, bytes.data() + at, 4);
    at += 4;
    return true;
  };
  int32_t max_len = 0;
  if (!read_i32(&max_len)) throw Error(path, "too short for a llama2.c tokenizer (no max_token_length header)");
  if (max_len <= 0 || max_len > kMaxPieceBytes)
    throw Error(path, "max_token_length is " + std::to_string(max_len) + ", not a llama2.c tokenizer");

  TokenizerData data;
  data.source = path;
  data.model = "llama";
  while (at < bytes.size()) {
    const std::string where = path + ": piece " + std::to_string(data.pieces.size());
    float score = 0;
    if (bytes.size() - at < 8) throw Error(where, "the file ends inside the piece header (truncated)");
    std::memcpy(&score, bytes.data() + at, 4);
    at += 4;
    int32_t len = 0;
    read_i32(&len);
    if (std::isnan(score)) throw Error(where, "the score is NaN");
    if (len < 0) throw Error(where, "negative length " + std::to_string(len));
    if (len > max_len)
      throw Error(where, "length " + std::to_string(len) + " exceeds the file's max_token_length " +
                             std::to_string(max_len));
    if (bytes.size() - at < static_cast<size_t>(len))
      throw Error(where, "the file ends inside the piece's " + std::to_string(len) + " bytes (truncated)");
    std::string piece = bytes.substr(at, static_cast<size_t>(len));
    at += static_cast<size_t>(len);
    // Undo the exporter's rewriting (llama2.c tokenizer.py): BOS/EOS were written with
    // newlines around them, "▁" as ' '.
    if (piece == "\n<s>\n") {
      data.bos_id = static_cast<int>(data.pieces.size());
      piece = "<s>";
    } else if (piece == "\n</s>\n") {
      data.eos_id = static_cast<int>(data.pieces.size());
      piece = "</s>";
    } else {
      piece = replace_all(std::move(piece), " ", "\xE2\x96\x81");
    }
    if (piece == "<unk>") data.unk_id = static_cast<int>(data.pieces.size());
    data.pieces.push_back(std::move(piece));
    data.scores.push_back(score);
  }
  if (data.pieces.empty()) throw Error(path, "the tokenizer file holds no pieces");
  return data;  // types stay empty: BpeTokenizer infers them from the pieces
}

std::unique_ptr<Tokenizer> load_llama2c_tokenizer(const std::string& path, int vocab_size) {
  TokenizerData data = read_llama2c_tokenizer(path);
  if (vocab_size > 0 && data.pieces.size() != static_cast<size_t>(vocab_size))
    throw Error(path, "holds " + std::to_string(data.pieces.size()) + " pieces but a vocabulary of " +
                          std::to_string(vocab_size) + " was expected");
  return make_bpe_tokenizer(data);
}

}  // namespace llmwb
