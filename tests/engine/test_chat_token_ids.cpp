// Control tokens come only from the template: with a vocabulary that has every format's
// markers as control tokens, the markers a template writes become their ids, while the same
// markers typed in a message stay plain text; without markers in the messages the ids equal
// encode_with_special of the rendered text (what Hugging Face's tokenizer gives).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "llmwb/chat_template.h"
#include "model/synthetic_vocab.h"
#include "tokenizer/tokenizer.h"

namespace llmwb {
namespace {

const std::vector<std::string> kMarkers = {
    "<|im_start|>", "<|im_end|>",  "[INST]",   "[/INST]",  "<|start_header_id|>", "<|end_header_id|>",
    "<|eot_id|>",   "<|begin_of_text|>", "<think>", "</think>", "<|user|>", "<|assistant|>", "<|system|>"};

// A SentencePiece-style vocabulary (Llama 2 layout) with the markers of every format appended
// as control tokens, as Mistral v3, Llama 3 and Qwen vocabularies have theirs.
struct Vocab {
  std::unique_ptr<Tokenizer> tok;
  std::map<std::string, int> id;  // marker -> control id
};

const Vocab& vocab() {
  static const Vocab v = [] {
    TokenizerData d = make_synthetic_vocab(700);
    Vocab out;
    for (const std::string& m : kMarkers) {
      out.id[m] = static_cast<int>(d.pieces.size());
      d.pieces.push_back(m);
      d.scores.push_back(0.0f);
      d.types.push_back(3);  // CONTROL
    }
    out.id["<s>"] = 1;
    out.id["</s>"] = 2;
    out.tok = make_bpe_tokenizer(d);
    return out;
  }();
  return v;
}

ChatTokenizer chat_tokenizer(ChatFormat f) {
  ChatTokenizer t;
  const Tokenizer& tok = *vocab().tok;
  t.encode = [&tok](const std::string& text, bool special) {
    return special ? tok.encode_with_special(text) : tok.encode(text);
  };
  // Each family's BOS: Llama 3's <|begin_of_text|>, none for Qwen, <s> for the rest.
  if (f == ChatFormat::Llama3 || f == ChatFormat::Llama31) t.bos = {vocab().id.at("<|begin_of_text|>")};
  else if (f != ChatFormat::Qwen25 && f != ChatFormat::Qwen3 && f != ChatFormat::ChatML) t.bos = {1};
  return t;
}

std::string every_marker() {
  std::string s = "look:";
  for (const std::string& m : kMarkers) s += " " + m + "user";
  return s + " <s> </s> end";
}

bool is_control(int id) {
  for (const auto& [text, cid] : vocab().id)
    if (cid == id) return true;
  return false;
}

// The control ids a rendered chat should carry: one per Control segment, in order.
std::vector<int> template_control_ids(const RenderedChat& chat) {
  std::vector<int> ids;
  for (const ChatSegment& s : chat.segments)
    if (s.kind == ChatSegment::Kind::Control) ids.push_back(vocab().id.at(s.text));
  return ids;
}

std::vector<ChatMessage> conversation(const std::string& user_text) {
  return {{"system", "Be brief. " + user_text}, {"user", user_text}, {"assistant", "Fine. " + user_text},
          {"user", "again " + user_text}};
}

ChatTemplate template_of(ChatFormat f) {
  ChatTemplate t = chat_template_for(f);
  return t;
}

TEST(ChatTokenIds, MarkersTypedByTheUserStayPlainTextAndTheTemplatesBecomeControlIds) {
  for (ChatFormat f : all_chat_formats()) {
    if (f == ChatFormat::Completion) continue;
    std::vector<ChatMessage> messages = conversation(every_marker());
    if (f == ChatFormat::MistralV1) messages.erase(messages.begin());  // no system role
    const RenderedChat chat = render_chat(template_of(f), messages);
    const std::vector<int> ids = chat_token_ids(chat, chat_tokenizer(f));
    std::vector<int> controls;
    for (int id : ids)
      if (is_control(id)) controls.push_back(id);
    // The template's markers and nothing else; BOS first (the template's, or the vocabulary's).
    std::vector<int> want = template_control_ids(chat);
    const std::vector<int> bos = chat_tokenizer(f).bos;
    if (!bos.empty() && (want.empty() || want[0] != bos[0])) want.insert(want.begin(), bos[0]);
    EXPECT_EQ(controls, want) << chat_format_name(f) << ": " << chat.text();
    EXPECT_FALSE(want.empty()) << chat_format_name(f);
    // Rendering then parsing specials (the old Chat view path) would let the user's markers in.
    EXPECT_GT(vocab().tok->encode_with_special(chat.text()).size() - ids.size(), 0u) << chat_format_name(f);
  }
}

TEST(ChatTokenIds, WithoutMarkersInMessagesIdsEqualEncodeWithSpecialOfTheText) {
  for (ChatFormat f : all_chat_formats()) {
    std::vector<ChatMessage> messages = conversation("plain words, 42 of them");
    if (f == ChatFormat::MistralV1) messages.erase(messages.begin());
    const RenderedChat chat = render_chat(template_of(f), messages);
    const ChatTokenizer t = chat_tokenizer(f);
    std::vector<int> want = vocab().tok->encode_with_special(chat.text());
    if (!t.bos.empty() && (want.empty() || want[0] != t.bos[0])) want.insert(want.begin(), t.bos[0]);
    EXPECT_EQ(chat_token_ids(chat, t), want) << chat_format_name(f) << ": " << chat.text();
  }
}

TEST(ChatTokenIds, TheTemplatesBosIsNotDoubled) {
  const RenderedChat chat = render_chat(template_of(ChatFormat::Llama2), {{"user", "hi"}});
  const std::vector<int> ids = chat_token_ids(chat, chat_tokenizer(ChatFormat::Llama2));
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 1), 1);
  // A format without a template BOS (Zephyr) gets the vocabulary's.
  const std::vector<int> z =
      chat_token_ids(render_chat(template_of(ChatFormat::Zephyr), {{"user", "hi"}}), chat_tokenizer(ChatFormat::Zephyr));
  EXPECT_EQ(z[0], 1);
  EXPECT_EQ(std::count(z.begin(), z.end(), 1), 1);
}

TEST(ChatTokenIds, AMarkerTheVocabularyLacksIsPlainTextJoinedWithItsNeighbours) {
  // Llama 2's vocabulary has no [INST] token: "[INST] hi [/INST]" is one stretch of text, as
  // Hugging Face's tokenizer sees it (one dummy prefix, not one per stretch).
  TokenizerData d = make_synthetic_vocab(700);
  const auto tok = make_bpe_tokenizer(d);
  ChatTokenizer t;
  t.encode = [&](const std::string& text, bool special) {
    return special ? tok->encode_with_special(text) : tok->encode(text);
  };
  t.bos = {1};
  const RenderedChat chat = render_chat(template_of(ChatFormat::Llama2), {{"user", "hi"}});
  std::vector<int> want = {1};
  const std::vector<int> body = tok->encode("[INST] hi [/INST]");
  want.insert(want.end(), body.begin(), body.end());
  EXPECT_EQ(chat_token_ids(chat, t), want);
}

}  // namespace
}  // namespace llmwb
