// utf8.h — classifying UTF-8 byte sequences, for the tokenizer's normalizer and the
// incremental detokenizer.
//
// Well-formed sequences follow the Unicode Standard, Table 3-7 ("Well-Formed UTF-8 Byte
// Sequences"): no overlong forms, no surrogates (U+D800..U+DFFF), nothing above U+10FFFF.
// An ill-formed sequence is measured as its "maximal subpart" (Unicode §3.9, "U+FFFD
// Substitution of Maximal Subparts"), so that each one is replaced by exactly one U+FFFD.
#pragma once

#include <cstddef>
#include <string>

namespace llmwb::utf8 {

inline constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

// Classifies the bytes at s[0..n) (n >= 1):
//   k > 0  the first k bytes are one complete, well-formed character;
//   0      s[0..n) is a well-formed but incomplete prefix: more bytes could complete it;
//   -k     the first k bytes (k >= 1) are ill-formed (their maximal subpart).
inline int classify(const char* s, std::size_t n) {
  const auto b0 = static_cast<unsigned char>(s[0]);
  if (b0 < 0x80) return 1;
  int len;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;   // no overlong 3-byte forms
    if (b0 == 0xED) hi = 0x9F;   // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;   // no overlong 4-byte forms
    if (b0 == 0xF4) hi = 0x8F;   // nothing above U+10FFFF
  } else {
    return -1;  // a continuation byte or C0, C1, F5..FF: never starts a character
  }
  for (int i = 1; i < len; ++i) {
    if (static_cast<std::size_t>(i) >= n) return 0;
    const auto b = static_cast<unsigned char>(s[i]);
    const bool ok = i == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) return -i;
  }
  return len;
}

// True when every byte of `s` belongs to a complete, well-formed character.
inline bool is_valid(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const int k = classify(s.data() + i, s.size() - i);
    if (k <= 0) return false;
    i += static_cast<std::size_t>(k);
  }
  return true;
}

}  // namespace llmwb::utf8
