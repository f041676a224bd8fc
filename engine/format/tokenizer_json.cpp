#include "format/tokenizer_json.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "llmwb/errors.h"
#include "format/pre_tokenizer_preset.h"

namespace llmwb {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int32_t kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5;  // TokenizerData::types

json read_json_object(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path, "cannot open");
  std::ostringstream ss;
  ss << f.rdbuf();
  json j = json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw Error(path, "invalid JSON");
  if (!j.is_object()) throw Error(path, "is not a JSON object");
  return j;
}

std::string type_of(const json& j) {
  if (!j.is_object()) return j.is_null() ? "null" : "not an object";
  auto it = j.find("type");
  return it != j.end() && it->is_string() ? it->get<std::string>() : "no type";
}

// The pre-tokenizers of a tokenizer.json, flattened out of any "Sequence".
void flatten(const json& j, std::vector<const json*>* out) {
  if (j.is_object() && type_of(j) == "Sequence" && j.contains("pretokenizers") && j["pretokenizers"].is_array()) {
    for (const json& e : j["pretokenizers"]) flatten(e, out);
  } else if (!j.is_null()) {
    out->push_back(&j);
  }
}

// The preset name for the pre-tokenizer: a Split with a known regex followed by a ByteLevel
// that does not split again.
std::string read_pre(const json& root, const std::string& path) {
  std::vector<const json*> steps;
  if (auto it = root.find("pre_tokenizer"); it != root.end()) flatten(*it, &steps);
  std::string regex;
  bool byte_level = false;
  for (const json* s : steps) {
    const std::string type = type_of(*s);
    if (type == "Split" && regex.empty()) {
      const json& pattern = s->value("pattern", json::object());
      if (!pattern.is_object() || !pattern.contains("Regex") || !pattern["Regex"].is_string())
        throw Error(path, "pre_tokenizer Split: only a \"Regex\" pattern is supported");
      if (s->value("behavior", "") != "Isolated" || s->value("invert", false))
        throw Error(path, "pre_tokenizer Split: only behavior \"Isolated\" without invert is supported");
      regex = pattern["Regex"].get<std::string>();
    } else if (type == "ByteLevel") {
      if (s->value("use_regex", true))
        throw Error(path, "pre_tokenizer ByteLevel with use_regex (GPT-2's own split) is not supported; supported: a "
                          "Split regex of " + pre_tokenizer_names());
      if (s->value("add_prefix_space", false))
        throw Error(path, "pre_tokenizer ByteLevel with add_prefix_space is not supported");
      byte_level = true;
    } else {
      throw Error(path, "pre_tokenizer '" + type + "' is not supported (supported: Split with the regex of " +
                            pre_tokenizer_names() + ", then ByteLevel)");
    }
  }
  if (!byte_level) throw Error(path, "the pre_tokenizer has no ByteLevel step: only byte-level BPE is supported");
  if (regex.empty()) throw Error(path, "the pre_tokenizer has no Split regex (supported: " + pre_tokenizer_names() + ")");
  for (const PreTokenizerPreset& p : kPreTokenizerPresets)
    if (p.regex == regex) return std::string(p.name);
  throw Error(path, "pre_tokenizer Split regex '" + regex + "' is not one llmwb knows (" + pre_tokenizer_names() + ")");
}

// "NFC" or "" (no normalizer); any other normalizer is refused.
std::string read_normalizer(const json& root, const std::string& path) {
  auto it = root.find("normalizer");
  if (it == root.end() || it->is_null()) return "";
  const std::string type = type_of(*it);
  if (type == "NFC") return "NFC";
  throw Error(path, "normalizer '" + type + "' is not supported (none or NFC)");
}

// A bos_token / eos_token value of tokenizer_config.json: a string, an AddedToken object
// {"content": ...} or null.
std::string token_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return "";
}

int find_piece(const TokenizerData& t, const std::string& text) {
  for (size_t i = t.pieces.size(); i-- > 0;)   // added tokens sit at the end
    if (t.pieces[i] == text) return static_cast<int>(i);
  return -1;
}

}  // namespace

void read_tokenizer_config(const std::string& path, TokenizerData* t, bool with_special_tokens) {
  const json j = read_json_object(path);
  if (auto it = j.find("chat_template"); it != j.end()) {
    if (it->is_string()) {
      t->chat_template = it->get<std::string>();
    } else if (it->is_array()) {   // [{"name": "default", "template": "..."}, ...]
      for (const auto& e : *it)
        if (e.is_object() && e.value("name", "") == "default" && e.contains("template") && e["template"].is_string())
          t->chat_template = e["template"].get<std::string>();
    } else if (!it->is_null()) {
      throw Error(path, "key 'chat_template': expected a string or a list of named templates");
    }
  }
  if (with_special_tokens) {
    for (const auto& [key, id] : {std::pair<const char*, int*>{"bos_token", &t->bos_id}, {"eos_token", &t->eos_id}}) {
      auto it = j.find(key);
      if (it == j.end()) continue;
      const std::string text = token_text(*it);
      if (text.empty()) {
        if (it->is_null()) *id = -1;
        continue;
      }
      *id = find_piece(*t, text);
      if (*id < 0) throw Error(path, std::string("key '") + key + "': '" + text + "' is not a token of the vocabulary");
    }
    // Without add_bos_token, a vocabulary with a BOS adds it (Llama 3); Qwen says false.
    t->add_bos = t->bos_id >= 0;
  }
  if (auto it = j.find("add_bos_token"); it != j.end() && it->is_boolean()) t->add_bos = it->get<bool>();
}

TokenizerData read_tokenizer_json(const std::string& path) {
  const json root = read_json_object(path);
  TokenizerData t;
  t.source = path;
  t.model = "gpt2";
  t.unk_id = -1;
  t.add_bos = false;

  const json& model = root.value("model", json::object());
  const std::string type = type_of(model);
  if (type != "BPE")
    throw Error(path, "tokenizer model type '" + type + "' is not supported (only byte-level BPE)");
  t.pre = read_pre(root, path);
  t.normalizer = read_normalizer(root, path);
  if (auto it = root.find("decoder"); it != root.end() && !it->is_null() && type_of(*it) != "ByteLevel")
    throw Error(path, "decoder '" + type_of(*it) + "' is not supported (ByteLevel)");
  t.ignore_merges = model.value("ignore_merges", false);
  if (model.value("byte_fallback", false)) throw Error(path, "model.byte_fallback is not supported in byte-level BPE");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (auto it = model.find(key); it != model.end() && it->is_string() && !it->get<std::string>().empty())
      throw Error(path, std::string("model.") + key + " '" + it->get<std::string>() + "' is not supported");

  // The vocabulary: piece -> id, then the added tokens (ids past it, or overriding entries).
  const json& vocab = model.value("vocab", json::object());
  if (!vocab.is_object() || vocab.empty()) throw Error(path, "model.vocab is missing or empty");
  std::vector<std::pair<std::string, int32_t>> entries;   // piece, type
  auto place = [&](int64_t id, const std::string& piece, int32_t kind) {
    if (id < 0 || id > INT32_MAX) throw Error(path, "token '" + piece + "' has id " + std::to_string(id) + " out of range");
    if (static_cast<size_t>(id) >= entries.size()) entries.resize(static_cast<size_t>(id) + 1, {std::string(), 0});
    entries[static_cast<size_t>(id)] = {piece, kind};
  };
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it->is_number_integer()) throw Error(path, "model.vocab['" + it.key() + "'] is not an integer id");
    place(it->get<int64_t>(), it.key(), kNormal);
  }
  if (auto it = root.find("added_tokens"); it != root.end() && it->is_array()) {
    for (const json& a : *it) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
          !a["content"].is_string())
        throw Error(path, "added_tokens: an entry without an integer id and a string content");
      place(a["id"].get<int64_t>(), a["content"].get<std::string>(), a.value("special", false) ? kControl : kUserDefined);
    }
  }
  t.pieces.reserve(entries.size());
  t.types.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].second == 0) throw Error(path, "no token has id " + std::to_string(i) + " (ids must be contiguous)");
    t.pieces.push_back(std::move(entries[i].first));
    t.types.push_back(entries[i].second);
  }

  // Merges: "a b" (tokenizers < 0.20) or ["a", "b"] (newer). Byte-level pieces never hold a
  // space (GPT-2's alphabet spells it "Ġ"), so "a b" is unambiguous.
  const json& merges = model.value("merges", json::array());
  if (!merges.is_array()) throw Error(path, "model.merges is not a list");
  t.merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const json& m = merges[i];
    if (m.is_string()) {
      t.merges.push_back(m.get<std::string>());
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      const std::string a = m[0].get<std::string>(), b = m[1].get<std::string>();
      if (a.find(' ') != std::string::npos || b.find(' ') != std::string::npos)
        throw Error(path, "model.merges[" + std::to_string(i) + "]: a piece with a space is not byte-level");
      t.merges.push_back(a + " " + b);
    } else {
      throw Error(path, "model.merges[" + std::to_string(i) + "] is neither \"a b\" nor [\"a\", \"b\"]");
    }
  }

  // End of turn / message: Llama 3's <|eot_id|> and <|eom_id|>, ChatML's <|im_end|>.
  for (const char* eot : {"<|eot_id|>", "<|im_end|>"})
    if (t.eot_id < 0) t.eot_id = find_piece(t, eot);
  t.eom_id = find_piece(t, "<|eom_id|>");

  const fs::path config = fs::path(path).parent_path() / "tokenizer_config.json";
  std::error_code ec;
  if (fs::is_regular_file(config, ec)) read_tokenizer_config(config.string(), &t, /*with_special_tokens=*/true);
  return t;
}

void pad_vocabulary(TokenizerData* t, size_t n) {
  const bool typed = !t->types.empty();
  for (size_t i = t->pieces.size(); i < n; ++i) {
    t->pieces.push_back("[PAD" + std::to_string(i) + "]");
    if (typed) t->types.push_back(kUnused);
    if (!t->scores.empty()) t->scores.push_back(0.0f);
  }
}

}  // namespace llmwb
