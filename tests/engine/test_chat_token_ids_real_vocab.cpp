// chat_token_ids with the real Llama 3 and Qwen3 vocabularies (../shared/models/*-tokenizer):
// for every Llama 3 / Qwen rendering of reference.json the ids equal Hugging Face's
// (reference_ids.json, transformers.js via tools/chat-template-ref/ids.mjs), and turn markers
// typed in messages stay text while the template's become their ids.
// Needs the byte-level BPE tokenizer (tokenizer.json); where the build has none, it skips.
#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "llmwb/chat_template.h"
#include "support/chat_reference.h"
#include "support/test_support.h"
#include "tokenizer/tokenizer.h"

namespace llmwb {
namespace {

// The byte-level tokenizer of a shared tokenizer.json, or null where this build cannot read one.
std::shared_ptr<Tokenizer> byte_level(const std::string& name) {
  static std::map<std::string, std::shared_ptr<Tokenizer>> cache;
  if (auto it = cache.find(name); it != cache.end()) return it->second;
  std::shared_ptr<Tokenizer> tok;
  try {
    ModelFile none;  // no model: the tokenizer file alone
    tok = load_tokenizer_for(none, test::shared_path("models/" + name + "-tokenizer/tokenizer.json"));
    if (tok->kind().find("byte-level") == std::string::npos) tok.reset();
  } catch (const std::exception&) {
    tok.reset();
  }
  return cache[name] = tok;
}

ChatTokenizer chat_tokenizer(const Tokenizer& tok) {
  ChatTokenizer t;
  t.encode = [&tok](const std::string& text, bool special) {
    return special ? tok.encode_with_special(text) : tok.encode(text);
  };
  if (tok.bos_id() >= 0) t.bos = {tok.bos_id()};
  return t;
}

ChatTemplate template_named(const std::string& name) { return test::chat_reference_template(name); }

TEST(ChatTokenIdsRealVocab, IdsEqualHuggingFacesForEveryLlama3AndQwenRendering) {
  if (!byte_level("qwen3") || !byte_level("llama3")) GTEST_SKIP() << "this build has no byte-level BPE tokenizer";
  const nlohmann::json ref = test::chat_reference_json("reference_ids.json");
  ASSERT_GT(ref.size(), 200u);
  for (const auto& e : ref) {
    const test::ChatReferenceCase c = test::chat_reference_case(e);
    const RenderedChat chat = render_chat(template_named(c.template_name), c.messages, c.options);
    EXPECT_EQ(chat_token_ids(chat, chat_tokenizer(*byte_level(e.at("vocabulary")))), e.at("ids").get<std::vector<int>>())
        << c.label;
  }
}

TEST(ChatTokenIdsRealVocab, TurnMarkersTypedInMessagesStayText) {
  if (!byte_level("qwen3") || !byte_level("llama3")) GTEST_SKIP() << "this build has no byte-level BPE tokenizer";
  // Turn markers only: Qwen's <think> is a user-defined added token that Hugging Face's
  // tokenizer (and llmwb's plain encode) match anywhere, as a word of the vocabulary.
  const std::string typed = "<|im_start|>system <|im_end|> <|endoftext|> <|begin_of_text|> <|start_header_id|>user"
                            "<|end_header_id|> <|eot_id|> [INST] </s>";
  for (const auto& [name, vocab, first_special] :
       std::vector<std::tuple<std::string, std::string, int>>{{"qwen3", "qwen3", 151643},
                                                              {"qwen2.5", "qwen3", 151643},
                                                              {"llama3.1", "llama3", 128000},
                                                              {"llama3-instruct", "llama3", 128000}}) {
    const Tokenizer& tok = *byte_level(vocab);
    const RenderedChat chat = render_chat(template_named(name), {{"system", typed}, {"user", typed},
                                                                 {"assistant", typed}, {"user", typed}});
    std::vector<int> special, want;
    for (int id : chat_token_ids(chat, chat_tokenizer(tok)))
      if (id >= first_special) special.push_back(id);
    for (const ChatSegment& s : chat.segments)
      if (s.kind == ChatSegment::Kind::Control) want.push_back(tok.encode_with_special(s.text).at(0));
    EXPECT_EQ(special, want) << name;
  }
}

}  // namespace
}  // namespace llmwb
