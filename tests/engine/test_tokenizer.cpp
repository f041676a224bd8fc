// Tokenizer tests: libsentencepiece (SpTokenizer) is the reference; BpeTokenizer over the
// same vocabulary, read from a llama2.c .bin, a GGUF file or the .model itself, must give the
// same ids, and decoding must give the text back.
#include <gtest/gtest.h>
#include <sentencepiece_processor.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <random>

#include "llmwb/errors.h"
#include "support/test_support.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/llama2c_tokenizer.h"
#include "tokenizer/sp_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace llmwb {
namespace {

using test::shared_path;

const std::string kTok512Model = "models/stories260K/tok512.model";
const std::string kTok512Bin = "models/stories260K/tok512.bin";
const std::string kLlama2Model = "models/llama2-tokenizer/tokenizer.model";
const std::string kStoriesGguf = "models/stories260K/stories260K.gguf";

std::string long_paragraph() {
  std::string s;
  for (int i = 0; i < 40; ++i)
    s += "Once upon a time, there was a little girl named Lily. She loved to play outside in the park "
         "with her friends; one day (day " + std::to_string(i) + ") she found a shiny red ball!  ";
  return s;
}

// Text that exercises every part of the algorithm: merges, byte fallback for characters the
// vocabulary lacks, runs of spaces (extra whitespace is kept), control characters.
std::vector<std::string> sample_texts() {
  return {
      "Hello world",
      "Once upon a time, there was a little girl named Lily.",
      "Hello, world! How's it going? (fine) [ok] {x}; a:b - c_d \"quoted\" 'single' @#$%^&*+=/\\|~`",
      "0123456789 3.14159 1,000,000 2024-01-01",
      "café naïve über mañana résumé Ünïcödé ÀÉÎÕÜ",
      "日本語のテキスト 中文字符 한국어",
      "emoji 😀🎉👍🏽 ❤️ end",
      "a  b   c    d     e",
      "  leading spaces",
      "trailing spaces   ",
      " ",
      "   ",
      "line1\nline2\n\nline3\n",
      "tab\there\t\tx",
      "\n",
      "x\r\ny",
      "",
      long_paragraph(),
  };
}

// Random strings drawn from characters of several scripts, with spaces and newlines.
std::vector<std::string> random_texts(int count, uint32_t seed) {
  const std::vector<std::string> alphabet = {"a", "e", "t", "h", "o", "n", " ", " ", " ", "\n", ".", ",", "!",
                                             "L", "i", "l", "y", "é", "ü", "ñ", "日", "本", "😀", "\t", "7", "'"};
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) {
    std::string s;
    const int len = static_cast<int>(rng() % 40);
    for (int j = 0; j < len; ++j) s += alphabet[rng() % alphabet.size()];
    out.push_back(s);
  }
  return out;
}

// The vocabulary of a SentencePiece model, read through libsentencepiece, as a model file
// would carry it (GGUF tokenizer.ggml.tokens / scores / token_type).
TokenizerData vocabulary_of(const std::string& model_path) {
  sentencepiece::SentencePieceProcessor sp;
  EXPECT_TRUE(sp.Load(model_path).ok());
  TokenizerData d;
  d.source = model_path + " (as TokenizerData)";
  d.model = "llama";
  for (int id = 0; id < sp.GetPieceSize(); ++id) {
    d.pieces.push_back(sp.IdToPiece(id));
    d.scores.push_back(sp.GetScore(id));
    d.types.push_back(sp.IsUnknown(id) ? 2 : sp.IsControl(id) ? 3 : sp.IsUnused(id) ? 5 : sp.IsByte(id) ? 6 : 1);
  }
  d.bos_id = sp.bos_id();
  d.eos_id = sp.eos_id();
  d.unk_id = sp.unk_id();
  return d;
}

std::string show(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    }
  }
  return out;
}

void expect_same_ids(const Tokenizer& reference, const Tokenizer& other, const std::vector<std::string>& texts) {
  for (const std::string& s : texts) {
    const std::vector<int> want = reference.encode(s);
    EXPECT_EQ(other.encode(s), want) << "text: \"" << show(s) << "\"";
  }
}

void expect_round_trip(const Tokenizer& tok, const std::vector<std::string>& texts) {
  for (const std::string& s : texts) EXPECT_EQ(tok.decode(tok.encode(s)), s) << tok.kind() << " \"" << show(s) << "\"";
}

TEST(SpTokenizer, LoadsTok512WithLlamaSpecialIds) {
  SpTokenizer tok(shared_path(kTok512Model));
  EXPECT_EQ(tok.vocab_size(), 512);
  EXPECT_EQ(tok.bos_id(), 1);
  EXPECT_EQ(tok.eos_id(), 2);
  EXPECT_EQ(tok.piece(1), "<s>");
  EXPECT_TRUE(tok.is_control(1));
  EXPECT_TRUE(tok.is_control(2));
  EXPECT_TRUE(tok.is_byte(3 + 'A'));
  EXPECT_EQ(tok.piece(3 + 0x0A), "<0x0A>");
  EXPECT_FALSE(tok.is_byte(300));
  EXPECT_EQ(tok.kind(), "sentencepiece");
}

TEST(SpTokenizer, EncodingAddsDummyPrefixAndDecodingDropsIt) {
  SpTokenizer tok(shared_path(kTok512Model));
  const std::vector<int> ids = tok.encode("Lily");
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(tok.piece(ids.front()).rfind("\xE2\x96\x81", 0), 0u) << "first piece should start with U+2581";
  EXPECT_EQ(tok.decode(ids), "Lily");
  std::vector<int> with_bos = {tok.bos_id()};
  with_bos.insert(with_bos.end(), ids.begin(), ids.end());
  EXPECT_EQ(tok.decode(with_bos), "Lily");
}

TEST(BpeTokenizer, Llama2cBinGivesSentencePieceIdsOnTok512) {
  SpTokenizer sp(shared_path(kTok512Model));
  auto bpe = load_llama2c_tokenizer(shared_path(kTok512Bin), 512);
  EXPECT_EQ(bpe->kind(), "llama-bpe");
  ASSERT_EQ(bpe->vocab_size(), 512);
  for (int id = 0; id < 512; ++id) {
    ASSERT_EQ(bpe->piece(id), sp.piece(id)) << "id " << id;
    ASSERT_EQ(bpe->is_control(id), sp.is_control(id)) << "id " << id;
    ASSERT_EQ(bpe->is_byte(id), sp.is_byte(id)) << "id " << id;
  }
  EXPECT_EQ(bpe->bos_id(), sp.bos_id());
  EXPECT_EQ(bpe->eos_id(), sp.eos_id());
  expect_same_ids(sp, *bpe, sample_texts());
  expect_same_ids(sp, *bpe, random_texts(300, 1));
}

TEST(BpeTokenizer, GgufEmbeddedVocabularyGivesSentencePieceIdsOnTok512) {
  // The vocabulary llama.cpp's converter wrote into stories260K.gguf (tokenizer.ggml.*).
  const auto model = load_gguf(shared_path(kStoriesGguf));
  ASSERT_EQ(model->tokenizer.pieces.size(), 512u);
  SpTokenizer sp(shared_path(kTok512Model));
  auto bpe = make_bpe_tokenizer(model->tokenizer);
  EXPECT_EQ(bpe->bos_id(), sp.bos_id());
  EXPECT_EQ(bpe->eos_id(), sp.eos_id());
  expect_same_ids(sp, *bpe, sample_texts());
  expect_same_ids(sp, *bpe, random_texts(300, 2));
  expect_round_trip(*bpe, sample_texts());
}

TEST(BpeTokenizer, VocabularyReadFromSentencePieceModelGivesSameIdsOnTok512) {
  SpTokenizer sp(shared_path(kTok512Model));
  auto bpe = make_bpe_tokenizer(vocabulary_of(shared_path(kTok512Model)));
  expect_same_ids(sp, *bpe, sample_texts());
  expect_same_ids(sp, *bpe, random_texts(300, 6));
}

TEST(BpeTokenizer, GivesSentencePieceIdsOnLlama2Vocabulary) {
  SpTokenizer sp(shared_path(kLlama2Model));
  ASSERT_EQ(sp.vocab_size(), 32000);
  auto bpe = make_bpe_tokenizer(vocabulary_of(shared_path(kLlama2Model)));
  expect_same_ids(sp, *bpe, sample_texts());
  expect_same_ids(sp, *bpe, random_texts(300, 3));
}

TEST(BpeTokenizer, IllFormedUtf8IsEncodedAsSentencePieceDoes) {
  const std::vector<std::string> texts = {"\xFF", "abc\xE3\x81", "\x80x", "a\xC0\xAFz", "\xED\xA0\x80 s", "ok \xF4\x90\x80\x80",
                                          "x\xE3\x81y", "\xF0\x9F\x98", "\xC3"};
  SpTokenizer sp(shared_path(kLlama2Model));
  auto bpe = make_bpe_tokenizer(vocabulary_of(shared_path(kLlama2Model)));
  expect_same_ids(sp, *bpe, texts);
}

TEST(BpeTokenizer, LongTextMatchesSentencePiece) {
  // 100k characters: the merge loop must be O(n log n) for this to finish promptly.
  std::string text;
  for (const std::string& s : random_texts(5000, 4)) text += s;
  while (text.size() < 100000) text += long_paragraph();
  SpTokenizer sp(shared_path(kLlama2Model));
  auto bpe = make_bpe_tokenizer(vocabulary_of(shared_path(kLlama2Model)));
  EXPECT_EQ(bpe->encode(text), sp.encode(text));
}

TEST(Tokenizer, DecodeInvertsEncodeForEveryImplementation) {
  std::vector<std::string> texts = sample_texts();
  for (const std::string& s : random_texts(200, 5)) texts.push_back(s);
  expect_round_trip(SpTokenizer(shared_path(kTok512Model)), texts);
  expect_round_trip(*load_llama2c_tokenizer(shared_path(kTok512Bin), 512), texts);
  expect_round_trip(SpTokenizer(shared_path(kLlama2Model)), texts);
  expect_round_trip(*make_bpe_tokenizer(vocabulary_of(shared_path(kLlama2Model))), texts);
}

TEST(Tokenizer, DecodeMatchesSentencePieceDecodeIds) {
  sentencepiece::SentencePieceProcessor ref;
  ASSERT_TRUE(ref.Load(shared_path(kLlama2Model)).ok());
  SpTokenizer tok(shared_path(kLlama2Model));
  for (const std::string& s : sample_texts()) {
    std::vector<int> ids = tok.encode(s);
    ids.insert(ids.begin(), tok.bos_id());
    std::string want;
    ASSERT_TRUE(ref.Decode(ids, &want).ok());
    EXPECT_EQ(tok.decode(ids), want) << show(s);
  }
}

TEST(Tokenizer, TokenBytesDropsLeadingSpaceOnlyAtStartOrAfterBos) {
  SpTokenizer tok(shared_path(kLlama2Model));
  const std::vector<int> ids = tok.encode("the cat");
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(tok.token_bytes(ids[0], -1), "the");
  EXPECT_EQ(tok.token_bytes(ids[0], tok.bos_id()), "the");
  EXPECT_EQ(tok.token_bytes(ids[0], ids[1]), " the");
  EXPECT_EQ(tok.token_bytes(ids[1], ids[0]), " cat");
  EXPECT_EQ(tok.token_bytes(tok.bos_id(), -1), "");
  EXPECT_EQ(tok.token_bytes(tok.eos_id(), ids[1]), "");
  EXPECT_EQ(tok.token_bytes(3 + 0x0A, ids[1]), "\n");
  EXPECT_EQ(tok.token_bytes(-5, -1), "");
  EXPECT_EQ(tok.token_bytes(tok.vocab_size(), -1), "");
}

TEST(Tokenizer, DisplayShowsSpacesAndEscapesBytes) {
  SpTokenizer tok(shared_path(kLlama2Model));
  const std::vector<int> ids = tok.encode("the");
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(tok.display(ids[0]), " the");
  EXPECT_EQ(tok.display(3 + 0x0A), "\\x0A");
  EXPECT_EQ(tok.display(tok.bos_id()), "<s>");
}

TEST(Tokenizer, EncodeWithSpecialTurnsControlTextIntoTokens) {
  for (const auto& tok : {load_sentencepiece(shared_path(kLlama2Model)),
                          make_bpe_tokenizer(vocabulary_of(shared_path(kLlama2Model)))}) {
    const std::string text = "[INST] hi [/INST] hello </s><s>[INST] more [/INST]";
    std::vector<int> want = tok->encode("[INST] hi [/INST] hello ");
    want.push_back(tok->eos_id());
    want.push_back(tok->bos_id());
    const std::vector<int> tail = tok->encode("[INST] more [/INST]");
    want.insert(want.end(), tail.begin(), tail.end());
    EXPECT_EQ(tok->encode_with_special(text), want) << tok->kind();
    // Plain encode keeps the markers as text, as SentencePiece does.
    const std::vector<int> plain = tok->encode(text);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), tok->eos_id()), 0);
    // "<unk>" typed by a user is text, not the unknown token.
    EXPECT_EQ(tok->encode_with_special("<unk>"), tok->encode("<unk>"));
  }
}

// --- bad files ------------------------------------------------------------------------

std::string i32(int32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }
std::string f32(float v) { return std::string(reinterpret_cast<const char*>(&v), 4); }

TEST(Llama2cTokenizer, TruncatedFileNamesFileAndPiece) {
  const std::string bytes = test::read_file(shared_path(kTok512Bin));
  const std::string dir = test::scratch_dir("tok_truncated");
  // Cut inside the bytes of piece 3 ("<0x00>"): header 4, then pieces 0..2 of 4+4+len bytes.
  const size_t cut = 4 + (8 + 5) + (8 + 5) + (8 + 6) + 8 + 2;
  const std::string path = dir + "/cut.bin";
  test::write_file(path, bytes.substr(0, cut));
  const std::string msg = test::error_of([&] { read_llama2c_tokenizer(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("piece 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;

  test::write_file(path, bytes.substr(0, cut - 4));  // inside the header of piece 3
  const std::string msg2 = test::error_of([&] { read_llama2c_tokenizer(path); });
  EXPECT_NE(msg2.find("piece 3"), std::string::npos) << msg2;
  EXPECT_NE(msg2.find("truncated"), std::string::npos) << msg2;
}

TEST(Llama2cTokenizer, NegativeAndAbsurdLengthsAreRejected) {
  const std::string dir = test::scratch_dir("tok_lengths");
  const std::string path = dir + "/bad.bin";
  test::write_file(path, i32(7) + f32(0) + i32(5) + "<unk>" + f32(0) + i32(-3) + "abc");
  std::string msg = test::error_of([&] { read_llama2c_tokenizer(path); });
  EXPECT_NE(msg.find(path + ": piece 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("negative length -3"), std::string::npos) << msg;

  test::write_file(path, i32(7) + f32(0) + i32(5) + "<unk>" + f32(0) + i32(1 << 30) + "abc");
  msg = test::error_of([&] { read_llama2c_tokenizer(path); });
  EXPECT_NE(msg.find("piece 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("exceeds the file's max_token_length 7"), std::string::npos) << msg;

  test::write_file(path, i32(-1) + f32(0) + i32(5) + "<unk>");
  msg = test::error_of([&] { read_llama2c_tokenizer(path); });
  EXPECT_NE(msg.find("max_token_length is -1"), std::string::npos) << msg;

  test::write_file(path, "ab");
  msg = test::error_of([&] { read_llama2c_tokenizer(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("too short"), std::string::npos) << msg;
}

TEST(Llama2cTokenizer, WrongPieceCountIsReported) {
  const std::string path = shared_path(kTok512Bin);
  const std::string msg = test::error_of([&] { load_llama2c_tokenizer(path, 1000); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("holds 512 pieces but a vocabulary of 1000 was expected"), std::string::npos) << msg;
}

TEST(Llama2cTokenizer, ConvertsExporterSpellingBackToSentencePiecePieces) {
  const TokenizerData d = read_llama2c_tokenizer(shared_path(kTok512Bin));
  ASSERT_EQ(d.pieces.size(), 512u);
  EXPECT_EQ(d.pieces[1], "<s>");
  EXPECT_EQ(d.pieces[2], "</s>");
  EXPECT_EQ(d.bos_id, 1);
  EXPECT_EQ(d.eos_id, 2);
  SpTokenizer sp(shared_path(kTok512Model));
  for (int id = 0; id < 512; ++id) EXPECT_EQ(d.scores[static_cast<size_t>(id)], sp.score(id)) << id;
}

TEST(SpTokenizer, NonModelAndMissingFilesGiveErrorsNamingThem) {
  const std::string bin = shared_path(kTok512Bin);
  std::string msg = test::error_of([&] { load_sentencepiece(bin); });
  EXPECT_EQ(msg.rfind(bin + ": ", 0), 0u) << msg;
  const std::string missing = test::scratch_dir("tok_missing") + "/nope.model";
  msg = test::error_of([&] { load_sentencepiece(missing); });
  EXPECT_EQ(msg.rfind(missing + ": ", 0), 0u) << msg;
}

TEST(BpeTokenizer, InconsistentVocabularyIsRejected) {
  TokenizerData d = vocabulary_of(shared_path(kTok512Model));
  d.scores.pop_back();
  std::string msg = test::error_of([&] { make_bpe_tokenizer(d); });
  EXPECT_NE(msg.find("512 pieces but 511 scores"), std::string::npos) << msg;
  EXPECT_EQ(msg.rfind(d.source, 0), 0u) << msg;

  d = vocabulary_of(shared_path(kTok512Model));
  d.bos_id = 600;
  msg = test::error_of([&] { make_bpe_tokenizer(d); });
  EXPECT_NE(msg.find("BOS id 600 is outside the vocabulary of 512"), std::string::npos) << msg;

  d = TokenizerData{};
  d.source = "empty.gguf";
  msg = test::error_of([&] { make_bpe_tokenizer(d); });
  EXPECT_EQ(msg, "empty.gguf: the tokenizer vocabulary is empty");
}

// --- choosing the tokenizer for a model -------------------------------------------------

ModelFile fake_model(const std::string& path, int vocab) {
  ModelFile m;
  m.path = path;
  m.format = "llama2c";
  m.config.vocab_size = vocab;
  return m;
}

TEST(LoadTokenizerFor, VocabularyMismatchNamesBothFilesAndSizes) {
  const ModelFile m = fake_model(shared_path("models/stories260K/stories260K.bin"), 512);
  const std::string tok = shared_path(kLlama2Model);
  const std::string msg = test::error_of([&] { load_tokenizer_for(m, tok); });
  EXPECT_EQ(msg, "tokenizer " + tok + " has 32000 pieces but model " + m.path + " has a vocabulary of 512");
}

TEST(LoadTokenizerFor, ExplicitPathPicksImplementationByExtension) {
  const ModelFile m = fake_model(shared_path("models/stories260K/stories260K.bin"), 512);
  EXPECT_EQ(load_tokenizer_for(m, shared_path(kTok512Model))->kind(), "sentencepiece");
  EXPECT_EQ(load_tokenizer_for(m, shared_path(kTok512Bin))->kind(), "llama-bpe");
}

TEST(LoadTokenizerFor, PrefersVocabularyInsideTheModelFile) {
  ModelFile m = fake_model(shared_path("models/stories260K/stories260K.gguf"), 512);
  m.tokenizer = vocabulary_of(shared_path(kTok512Model));
  EXPECT_EQ(load_tokenizer_for(m, "")->kind(), "llama-bpe");
  m.tokenizer = TokenizerData{};
  m.tokenizer.sp_model_path = shared_path("models/stories260K/hf/tokenizer.model");
  EXPECT_EQ(load_tokenizer_for(m, "")->kind(), "sentencepiece");
}

TEST(LoadTokenizerFor, FindsTokenizerBesideLlama2cCheckpoint) {
  // stories260K.bin carries no vocabulary; tok512.model lies beside it.
  const ModelFile m = fake_model(shared_path("models/stories260K/stories260K.bin"), 512);
  auto tok = load_tokenizer_for(m, "");
  EXPECT_EQ(tok->kind(), "sentencepiece");
  EXPECT_EQ(tok->vocab_size(), 512);

  // A folder with only a llama2.c tokenizer.bin (a link to the shared one).
  const std::string dir = test::scratch_dir("tok_beside");
  std::filesystem::create_symlink(shared_path(kTok512Bin), dir + "/tokenizer.bin");
  EXPECT_EQ(load_tokenizer_for(fake_model(dir + "/model.bin", 512), "")->kind(), "llama-bpe");
}

TEST(LoadTokenizerFor, EveryFormatOfStories260KGetsTheSameTokenizer) {
  // GGUF carries its vocabulary, the Hugging Face folder a tokenizer.model, the llama2.c
  // checkpoint nothing (tok512.model beside it is found).
  SpTokenizer reference(shared_path(kTok512Model));
  const std::vector<std::string> texts = sample_texts();
  for (const char* path : {"models/stories260K/stories260K.gguf", "models/stories260K/hf",
                           "models/stories260K/stories260K.bin"}) {
    const auto model = load_model_file(shared_path(path));
    const auto tok = load_tokenizer_for(*model, "");
    ASSERT_EQ(tok->vocab_size(), 512) << path;
    expect_same_ids(reference, *tok, texts);
  }
}

TEST(LoadTokenizerFor, NoTokenizerAnywhereAsksForTheFlag) {
  const std::string dir = test::scratch_dir("tok_none");
  const ModelFile m = fake_model(dir + "/model.bin", 512);
  const std::string msg = test::error_of([&] { load_tokenizer_for(m, ""); });
  EXPECT_EQ(msg.rfind(m.path + ": ", 0), 0u) << msg;
  EXPECT_NE(msg.find("tok512.model"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--tokenizer"), std::string::npos) << msg;
}

}  // namespace
}  // namespace llmwb
