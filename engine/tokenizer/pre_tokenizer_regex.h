// pre_tokenizer_regex.h — splits text into the words byte-level BPE merges within, with a
// real Unicode regex engine: PCRE2 in UTF mode with Unicode properties (PCRE2_UCP, so \s,
// \p{L} and \p{N} follow the Unicode character database), JIT-compiled where the platform
// has PCRE2's JIT.
//
// The split is Hugging Face's Split pre-tokenizer with behavior "Isolated": every match is
// a word, and so is every stretch between matches (the Llama 3 and Qwen2 regexes leave none).
//
// The pattern is read as transformers.js reads it (an ECMAScript regex, flags "gu"), which is
// the reference llmwb's ids are tested against: \s and \S are ECMAScript's white space (it
// counts U+FEFF, PCRE2 counts U+0085 and U+180E instead), and the case-insensitive
// contraction group matches ASCII letters only (PCRE2's Unicode caseless 's' would also take
// U+017F 'ſ'), as transformers.js rewrites it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace llmwb {

class PreTokenizerRegex {
 public:
  // Compiles `pattern` (a tokenizer.json Split regex); throws llmwb::Error(where, ...) with
  // PCRE2's message and offset.
  PreTokenizerRegex(std::string_view pattern, const std::string& where);
  ~PreTokenizerRegex();
  PreTokenizerRegex(const PreTokenizerRegex&) = delete;
  PreTokenizerRegex& operator=(const PreTokenizerRegex&) = delete;

  // Appends the words of `text` (valid UTF-8) to `spans` as [begin, end) byte offsets, in
  // order. Thread-safe (each call has its own match data).
  void split_into(std::string_view text, std::vector<std::pair<size_t, size_t>>* spans) const;
  bool jit() const { return jit_; }

  // The PCRE2 spelling of a tokenizer.json regex with the ECMAScript meaning (see above).
  static std::string to_pcre2(std::string_view pattern, const std::string& where);

 private:
  void* code_ = nullptr;   // pcre2_code_8
  bool jit_ = false;
};

}  // namespace llmwb
