#include "tokenizer/bpe_tokenizer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <queue>

#include "llmwb/errors.h"
#include "tokenizer/utf8.h"

namespace llmwb {
namespace {

constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";  // "▁" U+2581, SentencePiece's space

enum TokenType : int8_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

// "<0x0A>" -> 10; anything else -> -1.
int byte_piece_value(std::string_view p) {
  if (p.size() != 6 || p.substr(0, 3) != "<0x" || p[5] != '>') return -1;
  auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  const int hi = hex(p[3]), lo = hex(p[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

// The type SentencePiece gives a piece, for vocabularies that carry no types (llama2.c .bin).
int8_t infer_type(const std::string& p, int id, int unk_id) {
  if (id == unk_id && p == "<unk>") return kUnknown;
  if (p == "<s>" || p == "</s>") return kControl;
  if (byte_piece_value(p) >= 0) return kByte;
  return kNormal;
}

// Only these pieces are merge results in SentencePiece (model_interface.cc puts control,
// unknown and byte pieces in a reserved map that BPE merging never consults).
bool mergeable(int8_t type) { return type == kNormal || type == kUserDefined || type == kUnused; }

}  // namespace

BpeTokenizer::BpeTokenizer(const TokenizerData& data) {
  const std::string& where = data.source;
  const size_t n = data.pieces.size();
  if (n == 0) throw Error(where, "the tokenizer vocabulary is empty");
  if (n > static_cast<size_t>(INT32_MAX)) throw Error(where, "the tokenizer vocabulary is too large");
  if (!data.scores.empty() && data.scores.size() != n)
    throw Error(where, "the tokenizer has " + std::to_string(n) + " pieces but " +
                           std::to_string(data.scores.size()) + " scores");
  if (!data.types.empty() && data.types.size() != n)
    throw Error(where, "the tokenizer has " + std::to_string(n) + " pieces but " +
                           std::to_string(data.types.size()) + " token types");

  pieces_ = data.pieces;
  // Without scores every merge ties and BPE degenerates to leftmost-first, as in llama.cpp.
  scores_ = data.scores.empty() ? std::vector<float>(n, 0.0f) : data.scores;
  unk_id_ = data.unk_id >= 0 && static_cast<size_t>(data.unk_id) < n ? data.unk_id : 0;
  types_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(scores_[i]))
      throw Error(where, "piece " + std::to_string(i) + " ('" + pieces_[i] + "') has a NaN score");
    if (data.types.empty()) {
      types_[i] = infer_type(pieces_[i], static_cast<int>(i), unk_id_);
    } else {
      const int32_t t = data.types[i];
      if (t < kNormal || t > kByte)
        throw Error(where, "piece " + std::to_string(i) + " ('" + pieces_[i] + "') has unknown token type " +
                               std::to_string(t));
      types_[i] = static_cast<int8_t>(t);
    }
  }

  byte_ids_.fill(-1);
  for (size_t i = 0; i < n; ++i) {
    const int id = static_cast<int>(i);
    ids_.emplace(pieces_[i], id);  // keeps the first id of a duplicated piece
    if (types_[i] == kByte) {
      const int v = byte_piece_value(pieces_[i]);
      if (v < 0) throw Error(where, "byte piece " + std::to_string(i) + " ('" + pieces_[i] + "') is not <0xNN>");
      if (byte_ids_[static_cast<size_t>(v)] < 0) byte_ids_[static_cast<size_t>(v)] = id;
    }
    if (types_[i] == kUserDefined && !pieces_[i].empty()) user_defined_.push_back(pieces_[i]);
  }
  std::sort(user_defined_.begin(), user_defined_.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });

  auto pick = [&](int given, const char* piece, int fallback, const char* what) {
    int id = given;
    if (id < 0) {
      const int found = find(piece);
      id = found >= 0 ? found : fallback;
    }
    if (id < 0 || static_cast<size_t>(id) >= n)
      throw Error(where, std::string(what) + " id " + std::to_string(id) + " is outside the vocabulary of " +
                             std::to_string(n));
    return id;
  };
  bos_id_ = pick(data.bos_id, "<s>", 1, "BOS");
  eos_id_ = pick(data.eos_id, "</s>", 2, "EOS");
  index_special_pieces();
}

int BpeTokenizer::find(std::string_view piece) const {
  const auto it = ids_.find(piece);
  return it == ids_.end() ? -1 : it->second;
}

const std::string& BpeTokenizer::piece(int id) const {
  static const std::string kNone;
  return id >= 0 && id < vocab_size() ? pieces_[static_cast<size_t>(id)] : kNone;
}

bool BpeTokenizer::is_control(int id) const {
  if (id < 0 || id >= vocab_size()) return false;
  const int8_t t = types_[static_cast<size_t>(id)];
  return t == kControl || t == kUnknown;
}

bool BpeTokenizer::is_byte(int id) const {
  return id >= 0 && id < vocab_size() && types_[static_cast<size_t>(id)] == kByte;
}

// A final symbol becomes its piece's id, or, when no piece has that text, one <0xNN> token
// per byte (SentencePiece's byte_fallback); without byte pieces, <unk>.
void BpeTokenizer::append_piece(std::string_view piece, std::vector<int>* out) const {
  const int id = find(piece);
  if (id >= 0) {
    out->push_back(id);
    return;
  }
  for (char c : piece) {
    const int b = byte_ids_[static_cast<unsigned char>(c)];
    out->push_back(b >= 0 ? b : unk_id_);
  }
}

std::vector<int> BpeTokenizer::encode(std::string_view text) const {
  std::vector<int> out;
  if (text.empty()) return out;

  // Normalize (SentencePiece's identity rule with add_dummy_prefix and escape_whitespaces):
  // a leading "▁", every ' ' as "▁", every byte of ill-formed UTF-8 as U+FFFD.
  std::string norm;
  norm.reserve(text.size() + text.size() / 4 + 3);
  norm += kSpaceSymbol;
  for (size_t i = 0; i < text.size();) {
    const int k = utf8::classify(text.data() + i, text.size() - i);
    if (k > 0) {
      if (text[i] == ' ') norm += kSpaceSymbol; else norm.append(text, i, static_cast<size_t>(k));
      i += static_cast<size_t>(k);
    } else {
      // SentencePiece's normalizer replaces each byte of an ill-formed or truncated
      // sequence with its own U+FFFD (not one per maximal subpart).
      norm += utf8::kReplacement;
      ++i;
    }
  }

  // Symbols: a doubly linked list over `norm`; a merged symbol grows and its right
  // neighbour becomes empty.
  struct Symbol {
    uint32_t start, len;
    int prev, next;
    bool frozen;  // a user-defined piece: never merged
  };
  std::vector<Symbol> sym;
  sym.reserve(norm.size());
  for (size_t i = 0; i < norm.size();) {
    size_t len = 0;
    bool frozen = false;
    for (const std::string& u : user_defined_) {
      if (norm.compare(i, u.size(), u) == 0) {
        len = u.size();
        frozen = true;
        break;
      }
    }
    if (len == 0) len = static_cast<size_t>(utf8::classify(norm.data() + i, norm.size() - i));  // well-formed now
    const int idx = static_cast<int>(sym.size());
    sym.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(len), idx - 1, -1, frozen});
    if (idx > 0) sym[static_cast<size_t>(idx - 1)].next = idx;
    i += len;
  }

  struct Pair {
    float score;
    int left, right;
    uint32_t size;
  };
  // Highest score first; among equal scores the leftmost pair (SentencePiece's SymbolPairComparator).
  auto lower = [](const Pair& a, const Pair& b) { return a.score < b.score || (a.score == b.score && a.left > b.left); };
  std::priority_queue<Pair, std::vector<Pair>, decltype(lower)> agenda(lower);
  // For merges into "unused" pieces, which SentencePiece splits back afterwards.
  std::map<std::string, std::pair<std::string, std::string>, std::less<>> rev_merge;

  auto view = [&](int i) {
    const Symbol& s = sym[static_cast<size_t>(i)];
    return std::string_view(norm).substr(s.start, s.len);
  };
  auto try_pair = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = sym[static_cast<size_t>(left)];
    const Symbol& r = sym[static_cast<size_t>(right)];
    if (l.frozen || r.frozen) return;
    const std::string_view joined = std::string_view(norm).substr(l.start, l.len + r.len);
    const int id = find(joined);
    if (id < 0 || !mergeable(types_[static_cast<size_t>(id)])) return;
    agenda.push({scores_[static_cast<size_t>(id)], left, right, l.len + r.len});
    if (types_[static_cast<size_t>(id)] == kUnused)
      rev_merge[std::string(joined)] = {std::string(view(left)), std::string(view(right))};
  };
  for (int i = 1; i < static_cast<int>(sym.size()); ++i) try_pair(i - 1, i);

  while (!agenda.empty()) {
    const Pair top = agenda.top();
    agenda.pop();
    Symbol& l = sym[static_cast<size_t>(top.left)];
    Symbol& r = sym[static_cast<size_t>(top.right)];
    // Stale: one side was merged away, or grew, since this pair was queued.
    if (l.len == 0 || r.len == 0 || l.len + r.len != top.size) continue;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) sym[static_cast<size_t>(r.next)].prev = top.left;
    try_pair(l.prev, top.left);
    try_pair(top.left, l.next);
  }

  out.reserve(sym.size());
  // Unused pieces are split back into the pair that formed them (SentencePiece's resegment).
  auto emit = [&](auto&& self, std::string_view piece) -> void {
    const int id = find(piece);
    if (id >= 0 && types_[static_cast<size_t>(id)] == kUnused) {
      const auto it = rev_merge.find(piece);
      if (it != rev_merge.end()) {
        self(self, it->second.first);
        self(self, it->second.second);
        return;
      }
    }
    append_piece(piece, &out);
  };
  for (int i = sym.empty() ? -1 : 0; i >= 0; i = sym[static_cast<size_t>(i)].next) emit(emit, view(i));
  return out;
}

std::unique_ptr<Tokenizer> make_bpe_tokenizer(const TokenizerData& data) {
  return std::make_unique<BpeTokenizer>(data);
}

}  // namespace llmwb
