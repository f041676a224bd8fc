// pre_tokenizer_preset.h — the byte-level BPE pre-tokenizers llmwb knows, by the name GGUF
// gives them (tokenizer.ggml.pre), with the split regex their tokenizer.json carries.
//
// One table serves both formats: reading a tokenizer.json maps its Split regex to a name;
// reading a GGUF takes ignore_merges and the normalizer from the name (GGUF has no keys for
// them); the tokenizer compiles the regex. The regexes are Hugging Face's, verbatim: Unicode
// classes (\p{L} letters, \p{N} numbers), a case-insensitive group for English contractions
// and a negative lookahead (\s+(?!\S) leaves the last space of a run to the next word).
#pragma once

#include <string>
#include <string_view>

namespace llmwb {

struct PreTokenizerPreset {
  std::string_view name;        // tokenizer.ggml.pre
  std::string_view regex;       // tokenizer.json pre_tokenizer Split pattern "Regex"
  bool ignore_merges;           // tokenizer.json model.ignore_merges
  std::string_view normalizer;  // "" or "NFC"
};

inline constexpr PreTokenizerPreset kPreTokenizerPresets[] = {
    // Llama 3 (and 3.1/3.2): numbers split into runs of at most three digits.
    {"llama-bpe",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     true, ""},
    // Qwen2, Qwen2.5, Qwen3: one digit per pre-token, NFC-normalized input.
    {"qwen2",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     false, "NFC"},
};

// The preset named `name` ("llama3" is llama.cpp's older name for "llama-bpe"), or nullptr.
inline const PreTokenizerPreset* find_pre_tokenizer(std::string_view name) {
  if (name == "llama3") name = "llama-bpe";
  for (const PreTokenizerPreset& p : kPreTokenizerPresets)
    if (p.name == name) return &p;
  return nullptr;
}

// "llama-bpe, qwen2": for messages that list what is supported.
inline std::string pre_tokenizer_names() {
  std::string out;
  for (const PreTokenizerPreset& p : kPreTokenizerPresets) out += (out.empty() ? "" : ", ") + std::string(p.name);
  return out;
}

}  // namespace llmwb
