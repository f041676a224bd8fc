// llmwb-cli tokenize — text to token ids with a model's tokenizer, as llama.cpp's
// llama-tokenize: one id and piece per line, or with --json one line per string,
// {"ids": [...], "pieces": [...]}, the BOS the vocabulary adds included. Text is plain
// (control-token text stays text) unless --special. --bench-file measures encoding speed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "args.h"
#include "command.h"
#include "format/model_file.h"
#include "json_output.h"
#include "llmwb/errors.h"
#include "llmwb/stats.h"
#include "tokenizer/tokenizer.h"

namespace llmwb::cli {
namespace {

std::string read_whole_file(const std::string& path, const char* what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path, std::string("cannot open the ") + what);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// --strings-file: a JSON array of strings.
std::vector<std::string> read_strings_file(const std::string& path) {
  const nlohmann::json j = nlohmann::json::parse(read_whole_file(path, "strings file"), nullptr, false);
  if (j.is_discarded()) throw Error(path, "invalid JSON (expected an array of strings)");
  if (!j.is_array()) throw Error(path, "expected a JSON array of strings");
  std::vector<std::string> out;
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_string()) throw Error(path, "element " + std::to_string(i) + " is not a string");
    out.push_back(j[i].get<std::string>());
  }
  return out;
}

std::unique_ptr<Tokenizer> open_tokenizer(const Args& a) {
  if (a.has("model")) return load_tokenizer_for(*load_model_file(a.str("model")), a.str("tokenizer"));
  if (a.has("tokenizer")) return load_tokenizer_file(a.str("tokenizer"));
  throw UsageError("give --model PATH or --tokenizer PATH (a tokenizer.json or a SentencePiece .model)");
}

// Encodes the file's text repeatedly for about a second; prints the median pass as JSON.
int bench(const Tokenizer& tok, const std::string& path, bool special) {
  const std::string text = read_whole_file(path, "bench file");
  using clock = std::chrono::steady_clock;
  std::vector<double> seconds;
  size_t tokens = 0;
  const auto start = clock::now();
  while (seconds.size() < 3 || (seconds.size() < 50 && std::chrono::duration<double>(clock::now() - start).count() < 1.0)) {
    const auto t0 = clock::now();
    tokens = (special ? tok.encode_with_special(text) : tok.encode(text)).size();
    seconds.push_back(std::chrono::duration<double>(clock::now() - t0).count());
  }
  const double median_s = median(seconds);
  nlohmann::ordered_json j = {{"tokenizer", tok.kind()},
                              {"file", path},
                              {"bytes", text.size()},
                              {"tokens", tokens},
                              {"runs", seconds.size()},
                              {"median_seconds", median_s},
                              {"mb_per_s", static_cast<double>(text.size()) / 1e6 / median_s}};
  std::printf("%s\n", dump_json(j).c_str());
  return 0;
}

int run_tokenize(const std::vector<std::string>& argv) {
  Args a(argv, {"model", "tokenizer", "text", "strings-file", "bench-file"}, {"special", "json", "no-bos"});
  std::unique_ptr<Tokenizer> tok = open_tokenizer(a);
  const bool special = a.flag("special");
  if (a.has("bench-file")) return bench(*tok, a.str("bench-file"), special);

  std::vector<std::string> texts = a.all("text");
  if (a.has("strings-file")) {
    std::vector<std::string> more = read_strings_file(a.str("strings-file"));
    texts.insert(texts.end(), more.begin(), more.end());
  }
  if (texts.empty()) throw UsageError("nothing to tokenize: give --text TEXT or --strings-file FILE");

  const bool json = a.flag("json");
  const bool bos = tok->add_bos() && !a.flag("no-bos");
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<int> ids;
    if (bos) ids.push_back(tok->bos_id());
    const std::vector<int> body = special ? tok->encode_with_special(texts[i]) : tok->encode(texts[i]);
    ids.insert(ids.end(), body.begin(), body.end());
    if (json) {
      // Pieces as the vocabulary spells them ("Ġthe", "▁the", "<0x0A>"): always valid UTF-8,
      // where the bytes of one token may be part of a character.
      nlohmann::ordered_json pieces = nlohmann::ordered_json::array();
      for (int id : ids) pieces.push_back(tok->piece(id));
      const nlohmann::ordered_json line = {{"ids", ids}, {"pieces", pieces}};
      std::printf("%s\n", dump_json(line).c_str());
    } else {
      if (i > 0) std::printf("\n");
      for (int id : ids) std::printf("%6d -> '%s'\n", id, tok->display(id).c_str());
    }
  }
  return 0;
}

const char* kUsage =
    "--model PATH | --tokenizer PATH [flags]\n"
    "  --model PATH            a model file or folder; its tokenizer is used\n"
    "  --tokenizer PATH        a tokenizer.json or SentencePiece .model (with --model: instead of the model's)\n"
    "  --text TEXT             a string to tokenize (repeatable)\n"
    "  --strings-file FILE     a JSON array of strings to tokenize\n"
    "  --special               turn the text of control tokens (<|eot_id|>, <|im_start|>) into their ids\n"
    "  --no-bos                leave out the BOS the vocabulary adds\n"
    "  --json                  one line per string: {\"ids\": [...], \"pieces\": [...]}\n"
    "  --bench-file FILE       encode FILE's text repeatedly; print the median speed as JSON (MB/s)\n";

const CommandRegistration kRegistration({"tokenize", "text to token ids with a model's tokenizer", kUsage, run_tokenize});

}  // namespace
}  // namespace llmwb::cli
