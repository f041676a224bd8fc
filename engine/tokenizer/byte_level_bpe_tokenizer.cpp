#include "tokenizer/byte_level_bpe_tokenizer.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <queue>

#include "llmwb/errors.h"
#include "format/pre_tokenizer_preset.h"
#include "tokenizer/byte_level_alphabet.h"
#include "tokenizer/unicode_nfc.h"
#include "tokenizer/utf8.h"

namespace llmwb {
namespace {

enum TokenType : int8_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

// The bytes a piece spelled in GPT-2's alphabet stands for ("Ġthe" -> " the"); false when a
// character is outside the alphabet (such a piece can never come out of merging bytes).
bool unspell(std::string_view piece, std::string* out) {
  out->clear();
  for (size_t i = 0; i < piece.size();) {
    const int k = utf8::classify(piece.data() + i, piece.size() - i);
    if (k <= 0) return false;
    const auto* u = reinterpret_cast<const unsigned char*>(piece.data() + i);
    uint32_t cp = u[0];
    if (k == 2) cp = ((u[0] & 0x1Fu) << 6) | (u[1] & 0x3Fu);
    if (k > 2) return false;   // the alphabet ends at U+0143
    const int b = byte_level::byte_of(cp);
    if (b < 0) return false;
    out->push_back(static_cast<char>(b));
    i += static_cast<size_t>(k);
  }
  return true;
}

// `text` with each ill-formed UTF-8 subpart replaced by U+FFFD (Unicode §3.9, as WHATWG's
// TextDecoder does); a sequence cut off by the end of the text is one subpart.
std::string well_formed(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (size_t i = 0; i < text.size();) {
    const int k = utf8::classify(text.data() + i, text.size() - i);
    if (k > 0) {
      out.append(text, i, static_cast<size_t>(k));
      i += static_cast<size_t>(k);
    } else {
      out += utf8::kReplacement;
      i += k == 0 ? text.size() - i : static_cast<size_t>(-k);
    }
  }
  return out;
}

bool is_well_formed(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const int k = utf8::classify(text.data() + i, text.size() - i);
    if (k <= 0) return false;
    i += static_cast<size_t>(k);
  }
  return true;
}

std::string hex_byte(unsigned char c) {
  static const char* kHex = "0123456789ABCDEF";
  return {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
}

}  // namespace

ByteLevelBpeTokenizer::ByteLevelBpeTokenizer(const TokenizerData& data) {
  const std::string& where = data.source;
  const size_t n = data.pieces.size();
  if (n == 0) throw Error(where, "the tokenizer vocabulary is empty");
  if (n > static_cast<size_t>(INT32_MAX)) throw Error(where, "the tokenizer vocabulary is too large");
  if (!data.types.empty() && data.types.size() != n)
    throw Error(where, "the tokenizer has " + std::to_string(n) + " pieces but " + std::to_string(data.types.size()) +
                           " token types");
  const PreTokenizerPreset* preset = find_pre_tokenizer(data.pre);
  if (!preset) {
    throw Error(where, data.pre.empty()
                           ? "the byte-level BPE vocabulary names no pre-tokenizer (tokenizer.ggml.pre); supported: " +
                                 pre_tokenizer_names()
                           : "pre-tokenizer '" + data.pre + "' (tokenizer.ggml.pre) is not supported; supported: " +
                                 pre_tokenizer_names());
  }
  if (!data.normalizer.empty() && data.normalizer != "NFC")
    throw Error(where, "normalizer '" + data.normalizer + "' is not supported (none or NFC)");
  pre_ = std::string(preset->name);
  ignore_merges_ = data.ignore_merges;
  nfc_ = data.normalizer == "NFC";
  regex_ = std::make_unique<PreTokenizerRegex>(preset->regex, where);

  pieces_ = data.pieces;
  types_.resize(n, kNormal);
  bytes_.resize(n);
  std::string b;
  for (size_t i = 0; i < n; ++i) {
    const int id = static_cast<int>(i);
    if (!data.types.empty()) {
      const int32_t t = data.types[i];
      if (t < kNormal || t > kByte)
        throw Error(where, "piece " + std::to_string(i) + " ('" + pieces_[i] + "') has unknown token type " +
                               std::to_string(t));
      types_[i] = static_cast<int8_t>(t);
    }
    switch (types_[i]) {
      case kNormal:
      case kByte:
        if (unspell(pieces_[i], &b)) {
          ids_by_bytes_.emplace(b, id);   // keeps the first id of a duplicated piece
          bytes_[i] = b;
        } else {
          bytes_[i] = pieces_[i];   // not in GPT-2's alphabet: unreachable by merging, decoded as written
        }
        break;
      case kUserDefined:
        bytes_[i] = pieces_[i];   // added tokens are stored as their text
        if (!pieces_[i].empty()) user_defined_.emplace_back(pieces_[i], id);
        break;
      default:   // control, unknown, unused: no text
        break;
    }
  }
  std::stable_sort(user_defined_.begin(), user_defined_.end(),
                   [](const auto& x, const auto& y) { return x.first.size() > y.first.size(); });
  for (const auto& [text, id] : user_defined_) user_defined_first_byte_[static_cast<unsigned char>(text[0])] = true;

  for (int v = 0; v < 256; ++v) {
    const auto it = ids_by_bytes_.find(std::string(1, static_cast<char>(v)));
    if (it == ids_by_bytes_.end()) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", v);
      throw Error(where, std::string("the byte-level vocabulary has no piece for byte ") + hex + " ('" +
                             byte_level::spell(static_cast<uint8_t>(v)) + "')");
    }
    byte_ids_[static_cast<size_t>(v)] = it->second;
  }

  merges_.reserve(data.merges.size());
  std::string lb, rb;
  for (size_t r = 0; r < data.merges.size(); ++r) {
    const std::string& m = data.merges[r];
    const size_t sp = m.find(' ');
    auto bad = [&](const std::string& what) {
      return Error(where, "merge " + std::to_string(r) + " ('" + m + "') " + what);
    };
    if (sp == std::string::npos || sp == 0 || sp + 1 == m.size() || m.find(' ', sp + 1) != std::string::npos)
      throw bad("is not two pieces separated by one space");
    const std::string_view left = std::string_view(m).substr(0, sp), right = std::string_view(m).substr(sp + 1);
    const auto find = [&](std::string_view piece, std::string* bytes) {
      const auto it = unspell(piece, bytes) ? ids_by_bytes_.find(*bytes) : ids_by_bytes_.end();
      if (it == ids_by_bytes_.end()) throw bad("names '" + std::string(piece) + "', which is not a piece of the vocabulary");
      return it->second;
    };
    const int l = find(left, &lb), rt = find(right, &rb);
    const auto joined = ids_by_bytes_.find(lb + rb);
    if (joined == ids_by_bytes_.end())
      throw bad("makes '" + std::string(left) + std::string(right) + "', which is not a piece of the vocabulary");
    merges_.emplace(pair_key(l, rt), Merge{static_cast<int>(r), joined->second});   // the first rank wins
  }

  auto check = [&](int id, const char* what) {
    if (id >= static_cast<int>(n))
      throw Error(where, std::string(what) + " id " + std::to_string(id) + " is outside the vocabulary of " +
                             std::to_string(n));
    return id < 0 ? -1 : id;
  };
  bos_id_ = check(data.bos_id, "BOS");
  eos_id_ = check(data.eos_id, "EOS");
  unk_id_ = check(data.unk_id, "UNK");
  add_bos_ = data.add_bos;
  index_special_pieces();
  index_end_of_generation({check(data.eot_id, "EOT"), check(data.eom_id, "EOM")});
}

const std::string& ByteLevelBpeTokenizer::piece(int id) const {
  static const std::string kNone;
  return id >= 0 && id < vocab_size() ? pieces_[static_cast<size_t>(id)] : kNone;
}

bool ByteLevelBpeTokenizer::is_control(int id) const {
  if (id < 0 || id >= vocab_size()) return false;
  const int8_t t = types_[static_cast<size_t>(id)];
  return t == kControl || t == kUnknown;
}

std::string ByteLevelBpeTokenizer::token_bytes(int id, int /*prev_id*/) const {
  if (id < 0 || id >= vocab_size()) return {};
  return bytes_[static_cast<size_t>(id)];
}

std::string ByteLevelBpeTokenizer::display(int id) const {
  if (id < 0 || id >= vocab_size()) return "<invalid " + std::to_string(id) + ">";
  const int8_t t = types_[static_cast<size_t>(id)];
  if (t == kControl || t == kUnknown || t == kUnused) return pieces_[static_cast<size_t>(id)];
  const std::string& s = bytes_[static_cast<size_t>(id)];
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int k = utf8::classify(s.data() + i, s.size() - i);
    if (k > 0 && !(k == 1 && (c < 0x20 || c == 0x7F))) {   // a whole printable character
      out.append(s, i, static_cast<size_t>(k));
      i += static_cast<size_t>(k);
    } else {   // a control byte, or part of a character split across tokens
      out += hex_byte(c);
      ++i;
    }
  }
  return out;
}

std::vector<int> ByteLevelBpeTokenizer::encode(std::string_view raw) const {
  std::vector<int> out;
  out.reserve(raw.size() / 3 + 1);
  std::string fixed;
  std::string_view text = raw;
  if (!is_well_formed(raw)) {
    fixed = well_formed(raw);
    text = fixed;
  }
  // User-defined added tokens are matched in the raw text, leftmost and longest first.
  size_t start = 0;
  for (size_t i = 0; i < text.size() && !user_defined_.empty();) {
    if (!user_defined_first_byte_[static_cast<unsigned char>(text[i])]) {
      ++i;
      continue;
    }
    const std::pair<std::string, int>* hit = nullptr;
    for (const auto& u : user_defined_) {
      if (text.substr(i, u.first.size()) == u.first) {
        hit = &u;
        break;
      }
    }
    if (!hit) {
      ++i;
      continue;
    }
    encode_text(text.substr(start, i - start), &out);
    out.push_back(hit->second);
    i += hit->first.size();
    start = i;
  }
  encode_text(text.substr(start), &out);
  return out;
}

void ByteLevelBpeTokenizer::encode_text(std::string_view text, std::vector<int>* out) const {
  if (text.empty()) return;
  std::string normalized;
  if (nfc_) {
    normalized = to_nfc(text);
    text = normalized;
  }
  std::vector<std::pair<size_t, size_t>> words;
  words.reserve(text.size() / 4 + 1);
  regex_->split_into(text, &words);
  for (const auto& [b, e] : words) encode_word(text.substr(b, e - b), out);
}

void ByteLevelBpeTokenizer::encode_word(std::string_view word, std::vector<int>* out) const {
  if (word.size() == 1) {
    out->push_back(byte_ids_[static_cast<unsigned char>(word[0])]);
    return;
  }
  if (ignore_merges_) {
    const auto it = ids_by_bytes_.find(word);
    if (it != ids_by_bytes_.end()) {
      out->push_back(it->second);
      return;
    }
  }

  // Symbols: one per byte, in a doubly linked list; a merged-away symbol gets id -1.
  struct Symbol {
    int id, prev, next;
  };
  const int n = static_cast<int>(word.size());
  std::vector<Symbol> sym(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    sym[static_cast<size_t>(i)] = {byte_ids_[static_cast<unsigned char>(word[static_cast<size_t>(i)])], i - 1,
                                   i + 1 < n ? i + 1 : -1};

  struct Pair {
    int rank, left, right, left_id, right_id, result;
  };
  // Lowest rank first; among equal ranks (the same merge) the leftmost pair.
  auto later = [](const Pair& a, const Pair& b) { return a.rank > b.rank || (a.rank == b.rank && a.left > b.left); };
  std::priority_queue<Pair, std::vector<Pair>, decltype(later)> agenda(later);
  auto try_pair = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const int l = sym[static_cast<size_t>(left)].id, r = sym[static_cast<size_t>(right)].id;
    const auto it = merges_.find(pair_key(l, r));
    if (it != merges_.end()) agenda.push({it->second.rank, left, right, l, r, it->second.result});
  };
  for (int i = 0; i + 1 < n; ++i) try_pair(i, i + 1);

  while (!agenda.empty()) {
    const Pair top = agenda.top();
    agenda.pop();
    Symbol& l = sym[static_cast<size_t>(top.left)];
    Symbol& r = sym[static_cast<size_t>(top.right)];
    // Stale: a side was merged (its id changed or it is gone) since the pair was queued.
    if (l.id != top.left_id || r.id != top.right_id || l.next != top.right) continue;
    l.id = top.result;
    r.id = -1;
    l.next = r.next;
    if (r.next >= 0) sym[static_cast<size_t>(r.next)].prev = top.left;
    try_pair(l.prev, top.left);
    try_pair(top.left, l.next);
  }
  for (int i = 0; i >= 0; i = sym[static_cast<size_t>(i)].next) out->push_back(sym[static_cast<size_t>(i)].id);
}

std::unique_ptr<Tokenizer> make_byte_level_bpe_tokenizer(const TokenizerData& data) {
  return std::make_unique<ByteLevelBpeTokenizer>(data);
}

}  // namespace llmwb
