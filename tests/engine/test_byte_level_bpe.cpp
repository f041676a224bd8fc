// Byte-level BPE (Llama 3, Qwen2/3): token ids equal transformers.js's on the corpus of
// tests/data (reference ids made by tools/tokenizer-ref), decode inverts encode, the GGUF
// writer and reader keep the vocabulary, end-of-generation tokens, incremental decoding of
// characters split across tokens, and the errors for vocabularies llmwb cannot run.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "llmwb/errors.h"
#include "format/gguf_llama_metadata.h"
#include "format/gguf_writer.h"
#include "model/model_maker.h"
#include "format/tokenizer_json.h"
#include "support/loader_expectations.h"
#include "support/test_support.h"
#include "tokenizer/byte_level_bpe_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace llmwb {
namespace {

using nlohmann::json;
using test::shared_path;

const char* kLlama3Json = "models/llama3-tokenizer/tokenizer.json";
const char* kQwen3Json = "models/qwen3-tokenizer/tokenizer.json";

json read_json(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f) << path;
  return json::parse(f);
}

std::string data_path(const std::string& name) { return std::string(LLMWB_SOURCE_DIR) + "/tests/data/" + name; }

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

// A corpus entry's bytes: the string, or the bytes of {"hex": ...}.
std::string bytes_of(const json& entry) {
  return entry.is_string() ? entry.get<std::string>() : from_hex(entry.at("hex").get<std::string>());
}

std::string show(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out.size() > 120 ? out.substr(0, 120) + "..." : out;
}

std::string ids_str(const std::vector<int>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
  return out + "]";
}

// The two real tokenizers, loaded once for the whole program (a tokenizer.json of 9-11 MB).
const Tokenizer& llama3() {
  static const std::unique_ptr<Tokenizer> tok = load_tokenizer_file(shared_path(kLlama3Json));
  return *tok;
}
const Tokenizer& qwen3() {
  static const std::unique_ptr<Tokenizer> tok = load_tokenizer_file(shared_path(kQwen3Json));
  return *tok;
}

// Every corpus string encodes to the reference ids; returns how many were compared.
size_t expect_reference_ids(const Tokenizer& tok, const std::string& ref_file) {
  const json corpus = read_json(data_path("tokenizer-corpus.json"));
  const json ref = read_json(data_path(ref_file));
  const json& plain = corpus.at("plain");
  const json& special = corpus.at("special");
  EXPECT_EQ(plain.size(), ref.at("plain").size()) << ref_file << " is stale: run tools/tokenizer-ref";
  EXPECT_EQ(special.size(), ref.at("special").size()) << ref_file << " is stale: run tools/tokenizer-ref";
  size_t mismatches = 0;
  for (size_t i = 0; i < plain.size() && i < ref.at("plain").size(); ++i) {
    const std::string text = bytes_of(plain[i]);
    const std::vector<int> want = ref.at("plain")[i].get<std::vector<int>>();
    const std::vector<int> got = tok.encode(text);
    if (got != want && ++mismatches <= 10)
      ADD_FAILURE() << ref_file << " plain[" << i << "] \"" << show(text) << "\"\n  llmwb: " << ids_str(got)
                    << "\n  reference: " << ids_str(want);
  }
  for (size_t i = 0; i < special.size() && i < ref.at("special").size(); ++i) {
    const std::string text = special[i].get<std::string>();
    const std::vector<int> want = ref.at("special")[i].get<std::vector<int>>();
    const std::vector<int> got = tok.encode_with_special(text);
    if (got != want && ++mismatches <= 10)
      ADD_FAILURE() << ref_file << " special[" << i << "] \"" << show(text) << "\"\n  llmwb: " << ids_str(got)
                    << "\n  reference: " << ids_str(want);
  }
  EXPECT_EQ(mismatches, 0u) << "strings whose ids differ from the reference";
  return plain.size() + special.size();
}

TEST(ByteLevelBpe, Llama3IdsEqualTransformersJsOnTheCorpus) {
  EXPECT_GE(expect_reference_ids(llama3(), "tokenizer-ref-llama3.json"), 300u);
}

TEST(ByteLevelBpe, Qwen3IdsEqualTransformersJsOnTheCorpus) {
  EXPECT_GE(expect_reference_ids(qwen3(), "tokenizer-ref-qwen3.json"), 300u);
}

// decode(encode(x)) == x for valid UTF-8 (Qwen: x in NFC, as the reference file records);
// ill-formed bytes come back as U+FFFD, one per maximal subpart.
void expect_round_trip(const Tokenizer& tok, const std::string& ref_file) {
  const json corpus = read_json(data_path("tokenizer-corpus.json"));
  const json normalized = read_json(data_path(ref_file)).at("normalized");
  const json& plain = corpus.at("plain");
  size_t failures = 0;
  for (size_t i = 0; i < plain.size(); ++i) {
    const std::string text = bytes_of(plain[i]);
    std::string want = text;
    if (auto it = normalized.find(std::to_string(i)); it != normalized.end()) want = it->get<std::string>();
    if (!plain[i].is_string()) {   // the well-formed text TextDecoder makes of the bytes
      EXPECT_FALSE(utf8::is_valid(text)) << "corpus hex entry " << i << " is valid UTF-8";
      want.clear();
      for (size_t k = 0; k < text.size();) {
        const int n = utf8::classify(text.data() + k, text.size() - k);
        if (n > 0) {
          want.append(text, k, static_cast<size_t>(n));
          k += static_cast<size_t>(n);
        } else {
          want += utf8::kReplacement;
          k += n == 0 ? text.size() - k : static_cast<size_t>(-n);
        }
      }
    }
    const std::string got = tok.decode(tok.encode(text));
    if (got != want && ++failures <= 10)
      ADD_FAILURE() << ref_file << " plain[" << i << "]: \"" << show(text) << "\" decodes to \"" << show(got) << "\"";
  }
  EXPECT_EQ(failures, 0u);
}

TEST(ByteLevelBpe, DecodeInvertsEncodeOnLlama3) { expect_round_trip(llama3(), "tokenizer-ref-llama3.json"); }
TEST(ByteLevelBpe, DecodeInvertsEncodeOnQwen3) { expect_round_trip(qwen3(), "tokenizer-ref-qwen3.json"); }

TEST(ByteLevelBpe, VocabulariesReportTheirKindAndSpecialTokens) {
  EXPECT_EQ(llama3().kind(), "byte-level BPE (llama-bpe)");
  EXPECT_EQ(qwen3().kind(), "byte-level BPE (qwen2)");
  EXPECT_EQ(llama3().vocab_size(), 128256);
  EXPECT_EQ(qwen3().vocab_size(), 151669);
  EXPECT_EQ(llama3().bos_id(), 128000);
  EXPECT_TRUE(llama3().add_bos());
  EXPECT_EQ(qwen3().bos_id(), -1);   // Qwen has no BOS and adds none
  EXPECT_FALSE(qwen3().add_bos());
  EXPECT_EQ(llama3().piece(128009), "<|eot_id|>");
  EXPECT_EQ(llama3().display(791), "The");
  EXPECT_EQ(llama3().display(1917), " world");
  EXPECT_EQ(llama3().display(198), "\\x0A");
}

TEST(ByteLevelBpe, EveryEndOfTurnTokenEndsGeneration) {
  const Tokenizer& l = llama3();
  EXPECT_TRUE(l.is_eog(128001));    // <|end_of_text|> (EOS)
  EXPECT_TRUE(l.is_eog(128009));    // <|eot_id|>
  EXPECT_FALSE(l.is_eog(128000));   // <|begin_of_text|>
  EXPECT_FALSE(l.is_eog(128006));   // <|start_header_id|>
  EXPECT_FALSE(l.is_eog(9906));     // "Hello"
  EXPECT_FALSE(l.is_eog(-1));
  const Tokenizer& q = qwen3();
  EXPECT_TRUE(q.is_eog(151645));    // <|im_end|> (EOS of tokenizer_config.json)
  EXPECT_TRUE(q.is_eog(151643));    // <|endoftext|>
  EXPECT_FALSE(q.is_eog(151644));   // <|im_start|>
  EXPECT_FALSE(q.is_eog(151667));   // <think>
}

TEST(ByteLevelBpe, ControlTokenTextIsPlainTextUnlessSpecialParsingIsAsked) {
  const Tokenizer& l = llama3();
  const std::vector<int> plain = l.encode("<|eot_id|>");
  EXPECT_GT(plain.size(), 1u);
  EXPECT_EQ(l.decode(plain), "<|eot_id|>");
  EXPECT_EQ(l.encode_with_special("<|eot_id|>"), std::vector<int>{128009});
  // Qwen's <think> is a user-defined added token: matched in plain text too (as Hugging Face
  // and llama.cpp do); <|im_start|> is a control token: text unless special parsing.
  const Tokenizer& q = qwen3();
  EXPECT_EQ(q.encode("<think>"), std::vector<int>{151667});
  EXPECT_GT(q.encode("<|im_start|>").size(), 1u);
  EXPECT_EQ(q.encode_with_special("<|im_start|>"), std::vector<int>{151644});
}

TEST(ByteLevelBpe, IncrementalDetokenizerHoldsACharacterSplitAcrossTokens) {
  for (const Tokenizer* tok : {&llama3(), &qwen3()}) {
    const std::string text = "a\xF0\xA0\x80\x80 \xE2\x9D\xA4\xEF\xB8\x8F x";   // "a𠀀 ❤️ x"
    const std::vector<int> ids = tok->encode(text);
    IncrementalDetokenizer detok(*tok);
    std::string streamed;
    bool held_a_partial_character = false;
    for (int id : ids) {
      const std::string bytes = tok->token_bytes(id, -1);
      const std::string chunk = detok.push(id);
      EXPECT_TRUE(utf8::is_valid(chunk)) << tok->kind() << ": chunk \"" << show(chunk) << "\"";
      if (!utf8::is_valid(bytes)) held_a_partial_character = true;
      streamed += chunk;
    }
    streamed += detok.flush();
    EXPECT_TRUE(held_a_partial_character) << tok->kind() << ": no token of the text ends inside a character";
    // A token chip shows such bytes as \xNN.
    for (int id : ids)
      if (!utf8::is_valid(tok->token_bytes(id, -1))) {
        EXPECT_NE(tok->display(id).find("\\x"), std::string::npos) << tok->display(id);
      }
    EXPECT_EQ(streamed, text) << tok->kind();
  }
}

// Writes `data` as the vocabulary of a weightless llama GGUF and reads it back.
TokenizerData through_gguf(const TokenizerData& data, const std::string& name) {
  ModelConfig c;
  c.dim = 64;
  c.hidden_dim = 128;
  c.n_layers = 1;
  c.n_heads = 4;
  c.n_kv_heads = 4;
  c.head_dim = 16;
  c.max_seq_len = 64;
  c.vocab_size = static_cast<int>(data.pieces.size());
  const std::string path = test::scratch_dir("byte_level_gguf_" + name) + "/vocab.gguf";
  GgufWriter w;
  w.set_str("general.architecture", "llama");
  set_llama_gguf_metadata(w, c, data, path);
  w.write(path);
  return load_gguf(path)->tokenizer;
}

TEST(ByteLevelBpe, VocabularyWrittenToGgufTokenizesIdentically) {
  const json corpus = read_json(data_path("tokenizer-corpus.json"));
  for (const char* file : {kLlama3Json, kQwen3Json}) {
    const TokenizerData original = read_tokenizer_json(shared_path(file));
    const TokenizerData back = through_gguf(original, file == kLlama3Json ? "llama3" : "qwen3");
    EXPECT_EQ(back.model, "gpt2");
    EXPECT_EQ(back.pre, original.pre);
    EXPECT_EQ(back.merges, original.merges);
    EXPECT_EQ(back.types, original.types);
    EXPECT_EQ(back.ignore_merges, original.ignore_merges);
    EXPECT_EQ(back.normalizer, original.normalizer);
    EXPECT_EQ(back.eot_id, original.eot_id);
    EXPECT_EQ(back.add_bos, original.add_bos);
    auto a = make_tokenizer(original), b = make_tokenizer(back);
    EXPECT_EQ(a->bos_id(), b->bos_id());
    EXPECT_EQ(a->eos_id(), b->eos_id());
    for (const json& e : corpus.at("plain")) {
      const std::string text = bytes_of(e);
      ASSERT_EQ(a->encode(text), b->encode(text)) << file << ": \"" << show(text) << "\"";
    }
  }
}

TEST(ByteLevelBpe, ExplicitTokenizerJsonIsPaddedToTheModelsEmbedding) {
  ModelFile m;
  m.path = "qwen3-shaped.gguf";
  m.config.vocab_size = 151936;
  auto tok = load_tokenizer_for(m, shared_path(kQwen3Json));
  EXPECT_EQ(tok->vocab_size(), 151936);
  EXPECT_EQ(tok->piece(151935), "[PAD151935]");
  EXPECT_EQ(tok->token_bytes(151935, -1), "");
  EXPECT_EQ(tok->encode("Hello world"), qwen3().encode("Hello world"));
  m.config.vocab_size = 1000;   // fewer rows than tokens: an error naming both sizes
  try {
    load_tokenizer_for(m, shared_path(kQwen3Json));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("151669"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("1000"), std::string::npos) << e.what();
  }
}

// A Hugging Face folder with a tokenizer.json (no tokenizer.model) gets the byte-level
// tokenizer, padded to the embedding's rows, with tokenizer_config.json's template and EOS.
TEST(ByteLevelBpe, HuggingFaceFolderWithTokenizerJsonLoadsIt) {
  ModelMakerOptions o;
  o.config = test::small_test_config();
  o.config.vocab_size = 151936;
  o.format = "safetensors";
  o.seed = 3;
  o.out = test::scratch_dir("byte_level_hf_folder") + "/model";
  make_model(o);
  std::filesystem::remove(o.out + "/tokenizer.model");
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
    std::filesystem::copy_file(shared_path(std::string("models/qwen3-tokenizer/") + f), o.out + "/" + f);
  const auto m = load_model_file(o.out);
  EXPECT_EQ(m->tokenizer.model, "gpt2");
  EXPECT_EQ(m->tokenizer.pre, "qwen2");
  EXPECT_EQ(m->tokenizer.pieces.size(), 151936u);
  EXPECT_NE(m->tokenizer.chat_template.find("<|im_start|>"), std::string::npos);
  const auto tok = load_tokenizer_for(*m, "");
  EXPECT_EQ(tok->kind(), "byte-level BPE (qwen2)");
  EXPECT_EQ(tok->eos_id(), 151645);
  EXPECT_EQ(tok->encode("Hello world"), (std::vector<int>{9707, 1879}));
}

TEST(ByteLevelBpe, UnknownPreTokenizerIsAnErrorNamingIt) {
  TokenizerData d = read_tokenizer_json(shared_path(kQwen3Json));
  d.pre = "deepseek-llm";
  const std::string msg = test::error_of([&] { make_tokenizer(d); });
  EXPECT_NE(msg.find("deepseek-llm"), std::string::npos) << msg;
  EXPECT_NE(msg.find("llama-bpe, qwen2"), std::string::npos) << msg;
  d.pre.clear();
  EXPECT_NE(test::error_of([&] { make_tokenizer(d); }).find("names no pre-tokenizer"), std::string::npos);
  // From a GGUF file: the message names the file too.
  d.pre = "falcon";
  const TokenizerData back = through_gguf(d, "unknown_pre");
  const std::string from_gguf = test::error_of([&] { make_tokenizer(back); });
  EXPECT_NE(from_gguf.find("vocab.gguf: pre-tokenizer 'falcon' (tokenizer.ggml.pre) is not supported"), std::string::npos)
      << from_gguf;
}

TEST(ByteLevelBpe, MergeNamingAnUnknownPieceIsAnError) {
  TokenizerData d = read_tokenizer_json(shared_path(kQwen3Json));
  d.merges.insert(d.merges.begin() + 5, "Ġ zzzqqqxx");
  std::string msg = test::error_of([&] { make_tokenizer(d); });
  EXPECT_NE(msg.find("merge 5 ('Ġ zzzqqqxx')"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'zzzqqqxx', which is not a piece"), std::string::npos) << msg;
  d.merges[5] = "no-space";
  msg = test::error_of([&] { make_tokenizer(d); });
  EXPECT_NE(msg.find("is not two pieces separated by one space"), std::string::npos) << msg;
}

TEST(ByteLevelBpe, UnsupportedTokenizerJsonIsAnErrorNamingFileAndType) {
  const std::string dir = test::scratch_dir("byte_level_bad_json");
  const std::string wordpiece = dir + "/tokenizer.json";
  test::write_file(wordpiece, R"({"model": {"type": "WordPiece", "vocab": {"a": 0}}, "pre_tokenizer": null})");
  std::string msg = test::error_of([&] { read_tokenizer_json(wordpiece); });
  EXPECT_NE(msg.find(wordpiece), std::string::npos) << msg;
  EXPECT_NE(msg.find("tokenizer model type 'WordPiece' is not supported"), std::string::npos) << msg;
  // Llama 2's tokenizer.json: BPE over "▁" pieces (Metaspace), not byte-level.
  test::write_file(wordpiece, R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
                                  "pre_tokenizer": {"type": "Metaspace", "replacement": "▁"}})");
  msg = test::error_of([&] { read_tokenizer_json(wordpiece); });
  EXPECT_NE(msg.find("pre_tokenizer 'Metaspace' is not supported"), std::string::npos) << msg;
  // A Split regex that is neither Llama 3's nor Qwen2's.
  test::write_file(wordpiece, R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
      "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "\\w+"}, "behavior": "Isolated", "invert": false},
        {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]}})");
  msg = test::error_of([&] { read_tokenizer_json(wordpiece); });
  EXPECT_NE(msg.find("regex '\\w+' is not one llmwb knows (llama-bpe, qwen2)"), std::string::npos) << msg;
  EXPECT_NE(test::error_of([&] { load_tokenizer_file(dir + "/missing.json"); }).find("missing.json: cannot open"),
            std::string::npos);
}

}  // namespace
}  // namespace llmwb
