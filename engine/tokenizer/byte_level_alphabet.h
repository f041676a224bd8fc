// byte_level_alphabet.h — GPT-2's byte-to-unicode mapping, in which byte-level BPE
// vocabularies spell their pieces.
//
// Radford et al. 2019 (GPT-2, encoder.py bytes_to_unicode): the 188 bytes that are printable
// Latin-1 characters ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves; the other 68
// (controls, space, DEL, NBSP, soft hyphen) map in byte order to U+0100, U+0101, ... so
// that no piece holds whitespace or a control character: ' ' is "Ġ" (U+0120), '\n' is "Ċ".
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace llmwb::byte_level {

// Code point of byte b's character.
inline uint32_t code_point(uint8_t b) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    uint32_t next = 256;
    for (int i = 0; i < 256; ++i) {
      const bool printable = (i >= '!' && i <= '~') || (i >= 0xA1 && i <= 0xAC) || (i >= 0xAE && i <= 0xFF);
      t[static_cast<size_t>(i)] = printable ? static_cast<uint32_t>(i) : next++;
    }
    return t;
  }();
  return table[b];
}

// Byte whose character is `cp`, or -1 when `cp` is not in the alphabet.
inline int byte_of(uint32_t cp) {
  static const std::array<int16_t, 512> table = [] {
    std::array<int16_t, 512> t{};
    t.fill(-1);
    for (int b = 0; b < 256; ++b) t[code_point(static_cast<uint8_t>(b))] = static_cast<int16_t>(b);
    return t;
  }();
  return cp < table.size() ? table[cp] : -1;
}

// The UTF-8 spelling of byte b's character (one or two bytes).
inline std::string spell(uint8_t b) {
  const uint32_t cp = code_point(b);
  if (cp < 0x80) return std::string(1, static_cast<char>(cp));
  return {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
}

}  // namespace llmwb::byte_level
