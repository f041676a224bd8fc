#include "tokenizer/pre_tokenizer_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <memory>

#include "llmwb/errors.h"

namespace llmwb {
namespace {

pcre2_code* code(void* p) { return static_cast<pcre2_code*>(p); }

// ECMAScript's \s (ECMA-262 WhiteSpace and LineTerminator): tab, LF, VT, FF, CR, the Zs
// spaces, U+2028, U+2029 and U+FEFF.
constexpr std::string_view kEcmaSpace =
    R"(\t\n\x{0B}\f\r\x{20}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF})";

// Hugging Face's contraction group, and the ASCII-only form transformers.js runs instead
// (ECMAScript had no inline (?i:...) groups).
constexpr std::string_view kCaselessContractions = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
constexpr std::string_view kAsciiContractions = "(?:'(?:[sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD]))";

struct MatchDataFree {
  void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};

}  // namespace

std::string PreTokenizerRegex::to_pcre2(std::string_view pattern, const std::string& where) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (!in_class && pattern.substr(i, kCaselessContractions.size()) == kCaselessContractions) {
      out += kAsciiContractions;
      i += kCaselessContractions.size() - 1;
    } else if (pattern[i] == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[++i];
      if (e == 's') {
        out += in_class ? std::string(kEcmaSpace) : "[" + std::string(kEcmaSpace) + "]";
      } else if (e == 'S') {
        if (in_class) throw Error(where, "pre-tokenizer regex: \\S inside a character class is not supported");
        out += "[^" + std::string(kEcmaSpace) + "]";
      } else {
        out += '\\';
        out += e;
      }
    } else {
      if (pattern[i] == '[' && !in_class) {
        in_class = true;
        out += '[';
        if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
        if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];   // a leading ']' is literal
        continue;
      }
      if (pattern[i] == ']' && in_class) in_class = false;
      out += pattern[i];
    }
  }
  return out;
}

PreTokenizerRegex::PreTokenizerRegex(std::string_view hf_pattern, const std::string& where) {
  const std::string pattern = to_pcre2(hf_pattern, where);
  int err = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* c = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP,
                                &err, &offset, nullptr);
  if (!c) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw Error(where, "pre-tokenizer regex does not compile at offset " + std::to_string(offset) + ": " +
                           reinterpret_cast<const char*>(msg));
  }
  code_ = c;
  // Without JIT (a platform PCRE2 lacks it for) the interpreter gives the same matches.
  jit_ = pcre2_jit_compile(c, PCRE2_JIT_COMPLETE) == 0;
}

PreTokenizerRegex::~PreTokenizerRegex() { pcre2_code_free(code(code_)); }

void PreTokenizerRegex::split_into(std::string_view text, std::vector<std::pair<size_t, size_t>>* spans) const {
  std::unique_ptr<pcre2_match_data, MatchDataFree> md(pcre2_match_data_create_from_pattern(code(code_), nullptr));
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0, gap = 0;   // gap: where the text not yet covered by a span starts
  while (pos < text.size()) {
    // The caller guarantees valid UTF-8 (the tokenizer replaced ill-formed bytes): no check.
    int rc = pcre2_match(code(code_), subject, text.size(), pos, PCRE2_NO_UTF_CHECK, md.get(), nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)   // the interpreter has no JIT stack to run out of
      rc = pcre2_match(code(code_), subject, text.size(), pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md.get(), nullptr);
    if (rc < 0) break;   // no further match (or a resource limit): the rest is one word
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
    size_t b = ov[0], e = ov[1];
    if (e == b) {   // an empty match: step over one character (the shipped regexes have none)
      ++e;
      while (e < text.size() && (static_cast<unsigned char>(text[e]) & 0xC0) == 0x80) ++e;
      pos = e;
      continue;
    }
    if (b > gap) spans->emplace_back(gap, b);
    spans->emplace_back(b, e);
    gap = pos = e;
  }
  if (gap < text.size()) spans->emplace_back(gap, text.size());
}

}  // namespace llmwb
