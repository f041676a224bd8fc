// Incremental detokenization: streaming tokens one at a time must never emit a partial or
// ill-formed UTF-8 sequence, and what it emits must add up to the whole decode.
#include <gtest/gtest.h>

#include <random>

#include "support/test_support.h"
#include "tokenizer/tokenizer.h"

namespace llmwb {
namespace {

using test::shared_path;

// RFC 3629 section 4 (UTF8-octets ABNF), written out independently of the engine's utf8.h.
bool well_formed_utf8(const std::string& s) {
  auto in = [](unsigned char c, int lo, int hi) { return c >= lo && c <= hi; };
  size_t i = 0;
  const size_t n = s.size();
  auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  while (i < n) {
    const unsigned char c = at(i);
    size_t need;
    int lo = 0x80, hi = 0xBF;
    if (c <= 0x7F) { i += 1; continue; }
    if (in(c, 0xC2, 0xDF)) need = 1;
    else if (c == 0xE0) { need = 2; lo = 0xA0; }
    else if (in(c, 0xE1, 0xEC) || in(c, 0xEE, 0xEF)) need = 2;
    else if (c == 0xED) { need = 2; hi = 0x9F; }
    else if (c == 0xF0) { need = 3; lo = 0x90; }
    else if (in(c, 0xF1, 0xF3)) need = 3;
    else if (c == 0xF4) { need = 3; hi = 0x8F; }
    else return false;
    if (i + need >= n) return false;  // the sequence is cut off
    if (!in(at(i + 1), lo, hi)) return false;
    for (size_t k = 2; k <= need; ++k)
      if (!in(at(i + k), 0x80, 0xBF)) return false;
    i += need + 1;
  }
  return true;
}

struct Streamed {
  std::string text;
  bool every_chunk_valid = true;
  std::string bad_chunk;
};

Streamed stream(const Tokenizer& tok, const std::vector<int>& ids, int prev = -1) {
  IncrementalDetokenizer detok(tok, prev);
  Streamed out;
  auto take = [&](const std::string& chunk) {
    if (!well_formed_utf8(chunk) && out.every_chunk_valid) {
      out.every_chunk_valid = false;
      out.bad_chunk = chunk;
    }
    out.text += chunk;
  };
  for (int id : ids) take(detok.push(id));
  take(detok.flush());
  return out;
}

std::vector<std::string> texts() {
  return {"Once upon a time, there was a little girl named Lily.",
          "café naïve über mañana",
          "日本語のテキスト 中文",
          "emoji 😀🎉👍🏽 ❤️ end",
          "  spaced   out  \n\ttabs\n",
          "mixed é日😀 bytes ñ"};
}

TEST(IncrementalDetokenizer, StreamingEncodedTextGivesValidChunksThatAddUpToDecode) {
  for (const char* model : {"models/stories260K/tok512.model", "models/llama2-tokenizer/tokenizer.model"}) {
    auto tok = load_sentencepiece(shared_path(model));
    for (const std::string& s : texts()) {
      std::vector<int> ids = {tok->bos_id()};
      for (int id : tok->encode(s)) ids.push_back(id);
      const Streamed got = stream(*tok, ids);
      EXPECT_TRUE(got.every_chunk_valid) << model << ": " << s;
      EXPECT_EQ(got.text, tok->decode(ids)) << model;
      EXPECT_EQ(got.text, s) << model;
    }
  }
}

TEST(IncrementalDetokenizer, HoldsBytesOfACharacterUntilItCompletes) {
  auto tok = load_sentencepiece(shared_path("models/stories260K/tok512.model"));
  // tok512 has no piece for the emoji: it is four byte tokens <0xF0><0x9F><0x98><0x80>.
  const std::vector<int> ids = tok->encode("😀");
  std::vector<int> bytes;
  for (int id : ids)
    if (tok->is_byte(id)) bytes.push_back(id);
  ASSERT_EQ(bytes.size(), 4u);
  IncrementalDetokenizer detok(*tok, tok->bos_id());
  EXPECT_EQ(detok.push(bytes[0]), "");
  EXPECT_EQ(detok.push(bytes[1]), "");
  EXPECT_EQ(detok.push(bytes[2]), "");
  EXPECT_EQ(detok.push(bytes[3]), "😀");
  EXPECT_EQ(detok.flush(), "");
}

TEST(IncrementalDetokenizer, FlushReplacesAnUnfinishedCharacter) {
  auto tok = load_sentencepiece(shared_path("models/stories260K/tok512.model"));
  const int e3 = 3 + 0xE3, x81 = 3 + 0x81;
  IncrementalDetokenizer detok(*tok);
  EXPECT_EQ(detok.push(e3), "");
  EXPECT_EQ(detok.push(x81), "");
  EXPECT_EQ(detok.flush(), "\xEF\xBF\xBD");
  EXPECT_EQ(detok.flush(), "");
}

TEST(IncrementalDetokenizer, IllFormedBytesBecomeReplacementCharacters) {
  auto tok = load_sentencepiece(shared_path("models/stories260K/tok512.model"));
  auto byte = [](int b) { return 3 + b; };
  IncrementalDetokenizer detok(*tok);
  // A lone continuation byte can never be completed: replaced at once.
  EXPECT_EQ(detok.push(byte(0x80)), "\xEF\xBF\xBD");
  // A lead byte followed by ASCII: the lead is replaced, the ASCII comes through.
  EXPECT_EQ(detok.push(byte(0xE3)), "");
  EXPECT_EQ(detok.push(byte('A')), "\xEF\xBF\xBD" "A");
  // An overlong lead (C0) and a surrogate prefix (ED A0) are ill-formed.
  EXPECT_EQ(detok.push(byte(0xC0)), "\xEF\xBF\xBD");
  EXPECT_EQ(detok.push(byte(0xED)), "");
  EXPECT_EQ(detok.push(byte(0xA0)), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(detok.flush(), "");
}

TEST(IncrementalDetokenizer, RandomTokenStreamsNeverEmitIllFormedText) {
  for (const char* model : {"models/stories260K/tok512.model", "models/llama2-tokenizer/tokenizer.model"}) {
    auto tok = load_sentencepiece(shared_path(model));
    std::mt19937 rng(7);
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<int> ids;
      const int len = 1 + static_cast<int>(rng() % 30);
      for (int i = 0; i < len; ++i) {
        // Half byte tokens, to produce many split and broken characters.
        ids.push_back(rng() % 2 ? 3 + static_cast<int>(rng() % 256) : static_cast<int>(rng() % static_cast<unsigned>(tok->vocab_size())));
      }
      const Streamed got = stream(*tok, ids);
      ASSERT_TRUE(got.every_chunk_valid) << model << " trial " << trial;
      const std::string whole = tok->decode(ids);
      // When the whole decode is well-formed, streaming must reproduce it exactly.
      if (well_formed_utf8(whole)) {
        EXPECT_EQ(got.text, whole) << model << " trial " << trial;
      }
    }
  }
}

TEST(IncrementalDetokenizer, StartsAfterGivenPreviousToken) {
  auto tok = load_sentencepiece(shared_path("models/llama2-tokenizer/tokenizer.model"));
  const std::vector<int> ids = tok->encode("the cat");
  ASSERT_EQ(ids.size(), 2u);
  // Continuing after a prompt: the first generated piece keeps its space.
  IncrementalDetokenizer after_prompt(*tok, ids[0]);
  EXPECT_EQ(after_prompt.push(ids[1]), " cat");
  // Right after BOS the dummy-prefix space is dropped.
  IncrementalDetokenizer after_bos(*tok, tok->bos_id());
  EXPECT_EQ(after_bos.push(ids[0]), "the");
}

}  // namespace
}  // namespace llmwb
