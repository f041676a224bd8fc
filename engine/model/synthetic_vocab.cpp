// synthetic_vocab.cpp — the synthetic vocabulary and a minimal protobuf encoder for it.
#include "model/synthetic_vocab.h"

#include <cctype>
#include <cstdio>
#include <cstring>
#include <set>

#include "llmwb/errors.h"

namespace llmwb {

namespace {

constexpr const char* kSpace = "\xE2\x96\x81";   // U+2581 "▁", SentencePiece's visible space
// Letters in rough English frequency order, so the earliest merges look like real ones.
constexpr const char* kLetters = "etaoinshrdlcumwfgypbvkjxqz";

// Protocol Buffers wire format (https://protobuf.dev/programming-guides/encoding/): a key is
// varint(field << 3 | wire type); 0 = varint, 2 = length-delimited, 5 = 32-bit.
void put_varint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
void put_key(std::string* out, int field, int wire) { put_varint(out, static_cast<uint64_t>(field) << 3 | wire); }
void put_bytes(std::string* out, int field, const std::string& s) {
  put_key(out, field, 2);
  put_varint(out, s.size());
  out->append(s);
}
void put_int(std::string* out, int field, int64_t v) {   // int32/bool/enum; negatives as 10-byte varints
  put_key(out, field, 0);
  put_varint(out, static_cast<uint64_t>(v));
}
void put_float(std::string* out, int field, float f) {
  put_key(out, field, 5);
  char b[4];
  std::memcpy(b, &f, 4);   // little-endian host, as the format requires
  out->append(b, 4);
}

}  // namespace

TokenizerData make_synthetic_vocab(int vocab_size) {
  if (vocab_size < 259)
    throw Error("vocab", "a byte-level vocabulary needs at least 259 pieces (<unk>, <s>, </s> and 256 bytes), not " +
                             std::to_string(vocab_size));
  TokenizerData t;
  t.source = "synthetic byte-level vocabulary";
  t.model = "llama";
  t.bos_id = 1;
  t.eos_id = 2;
  t.unk_id = 0;
  auto add = [&](const std::string& p, int type) {
    t.pieces.push_back(p);
    t.types.push_back(type);
    // Control and byte pieces score 0 as in SentencePiece; others -1, -2, ... in order.
    t.scores.push_back(type == 1 ? -static_cast<float>(t.pieces.size() - 259) : 0.0f);
  };
  add("<unk>", 2);
  add("<s>", 3);
  add("</s>", 3);
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    add(buf, 6);
  }
  const int n = vocab_size;
  std::vector<std::string> chars = {kSpace};
  for (const char* l = kLetters; *l; ++l) chars.emplace_back(1, *l);
  for (int c = 33; c < 127; ++c)
    if (!std::islower(c)) chars.emplace_back(1, static_cast<char>(c));
  for (const auto& c : chars)
    if (static_cast<int>(t.pieces.size()) < n) add(c, 1);

  // Merges, breadth first: every piece of one level extended by a letter. "▁" starts words
  // only, so it is never appended.
  std::vector<std::string> level = {kSpace};
  for (const char* l = kLetters; *l; ++l) level.emplace_back(1, *l);
  while (static_cast<int>(t.pieces.size()) < n) {
    std::vector<std::string> next;
    for (const auto& p : level) {
      for (const char* l = kLetters; *l && static_cast<int>(t.pieces.size()) < n; ++l) {
        next.push_back(p + *l);
        add(next.back(), 1);
      }
      if (static_cast<int>(t.pieces.size()) >= n) break;
    }
    level.swap(next);
  }
  return t;
}

std::string sentencepiece_model_bytes(const TokenizerData& v) {
  std::string model;
  for (size_t i = 0; i < v.pieces.size(); ++i) {
    std::string p;   // ModelProto.SentencePiece
    put_bytes(&p, 1, v.pieces[i]);
    put_float(&p, 2, i < v.scores.size() ? v.scores[i] : 0.0f);
    put_int(&p, 3, i < v.types.size() ? v.types[i] : 1);
    put_bytes(&model, 1, p);
  }
  std::string trainer;   // TrainerSpec
  put_int(&trainer, 3, 2);   // model_type BPE
  put_int(&trainer, 4, static_cast<int64_t>(v.pieces.size()));   // vocab_size
  put_int(&trainer, 35, 1);  // byte_fallback
  put_int(&trainer, 40, v.unk_id);
  put_int(&trainer, 41, v.bos_id);
  put_int(&trainer, 42, v.eos_id);
  put_int(&trainer, 43, v.pad_id);
  put_bytes(&model, 2, trainer);
  std::string norm;   // NormalizerSpec
  put_bytes(&norm, 1, "identity");
  put_int(&norm, 3, 1);   // add_dummy_prefix
  put_int(&norm, 4, 0);   // remove_extra_whitespaces
  put_int(&norm, 5, 1);   // escape_whitespaces
  put_bytes(&model, 3, norm);
  return model;
}

}  // namespace llmwb
