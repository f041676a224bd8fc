// Built-in chat formats: each renderer follows its Hugging Face template statement by
// statement (the template text is in tests/data/chat_templates/), with Jinja's trim_blocks and
// lstrip_blocks on as transformers' apply_chat_template sets them.
#include "llmwb/chat_template.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <ctime>

#include "llmwb/errors.h"

namespace llmwb {
namespace {

using Kind = ChatSegment::Kind;

// Python's str.strip() set for ASCII text (Jinja's trim and the templates' .strip()).
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool contains(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

// Python's str.lstrip('\n') / rstrip('\n') / strip('\n').
std::string lstrip_nl(const std::string& s) { return s.substr(std::min(s.find_first_not_of('\n'), s.size())); }
std::string rstrip_nl(const std::string& s) {
  const size_t e = s.find_last_not_of('\n');
  return e == std::string::npos ? std::string() : s.substr(0, e + 1);
}
std::string strip_nl(const std::string& s) { return lstrip_nl(rstrip_nl(s)); }

void check_roles(const std::vector<ChatMessage>& messages) {
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string& r = messages[i].role;
    if (r != "system" && r != "user" && r != "assistant")
      throw Error("chat message " + std::to_string(i), "unknown role '" + r + "' (expected system, user or assistant)");
  }
}

// Collects segments, joining neighbours of the same kind.
class Out {
 public:
  Out& ctl(const std::string& t) { return add(Kind::Control, t); }
  Out& tpl(const std::string& t) { return add(Kind::Template, t); }
  Out& msg(const std::string& t) { return add(Kind::Content, t); }
  Out& add(Kind k, const std::string& t) {
    if (t.empty()) return *this;
    if (!segs_.empty() && segs_.back().kind == k && k != Kind::Control) segs_.back().text += t;
    else segs_.push_back({k, t});
    return *this;
  }
  void append(const std::vector<ChatSegment>& more) {
    for (const ChatSegment& s : more) add(s.kind, s.text);
  }
  std::vector<ChatSegment> take() { return std::move(segs_); }

 private:
  std::vector<ChatSegment> segs_;
};

// Python's .strip() applied to text built from several segments (Llama 2's content.strip()
// covers the <<SYS>> block and the user's text together).
std::vector<ChatSegment> strip_segments(std::vector<ChatSegment> v) {
  while (!v.empty()) {
    std::string& t = v.front().text;
    size_t b = 0;
    while (b < t.size() && is_space(t[b])) ++b;
    t.erase(0, b);
    if (!t.empty()) break;
    v.erase(v.begin());
  }
  while (!v.empty()) {
    std::string& t = v.back().text;
    while (!t.empty() && is_space(t.back())) t.pop_back();
    if (!t.empty()) break;
    v.pop_back();
  }
  return v;
}

[[noreturn]] void raise(size_t index, const std::string& what) {
  throw Error("chat message " + std::to_string(index), what);
}

// meta-llama/Llama-2-7b-chat-hf: the first system message goes inside the first [INST] as a
// <<SYS>> block; every user turn opens with BOS, every reply closes with EOS; turns must
// alternate.
std::vector<ChatSegment> render_llama2(const std::vector<ChatMessage>& messages) {
  size_t first = 0;
  const ChatMessage* system = nullptr;
  if (!messages.empty() && messages[0].role == "system") system = &messages[0], first = 1;
  Out out;
  for (size_t i = first; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    const size_t k = i - first;
    if ((m.role == "user") != (k % 2 == 0))
      raise(i, "the llama2 template needs user and assistant turns to alternate (after an optional system message)");
    Out content;
    if (k == 0 && system) content.tpl("<<SYS>>\n").msg(system->content).tpl("\n<</SYS>>\n\n");
    content.msg(m.content);
    const std::vector<ChatSegment> body = strip_segments(content.take());
    if (m.role == "user") {
      out.ctl("<s>").ctl("[INST]").tpl(" ");
      out.append(body);
      out.tpl(" ").ctl("[/INST]");
    } else if (m.role == "assistant") {
      out.tpl(" ");
      out.append(body);
      out.tpl(" ").ctl("</s>");
    }
  }
  return out.take();
}

// mistralai/Mistral-7B-Instruct-v0.1 and Mixtral-8x7B-Instruct-v0.1: user and assistant only.
std::vector<ChatSegment> render_mistral_v1(const std::vector<ChatMessage>& messages) {
  Out out;
  out.ctl("<s>");
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if ((m.role == "user") != (i % 2 == 0))
      raise(i, m.role == "system" ? "the mistral-v1 template has no system role"
                                  : "the mistral-v1 template needs user and assistant turns to alternate");
    if (m.role == "user") out.ctl("[INST]").tpl(" ").msg(m.content).tpl(" ").ctl("[/INST]");
    else out.msg(m.content).ctl("</s>");
  }
  return out.take();
}

// mistralai/Mistral-7B-Instruct-v0.2 (and its "v1 tokenizer" template): the system message is
// prepended to the first user turn.
std::vector<ChatSegment> render_mistral(const std::vector<ChatMessage>& messages) {
  size_t first = 0;
  const ChatMessage* system = nullptr;
  if (!messages.empty() && messages[0].role == "system") system = &messages[0], first = 1;
  Out out;
  out.ctl("<s>");
  for (size_t i = first; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    const size_t k = i - first;
    if ((m.role == "user") != (k % 2 == 0))
      raise(i, "the mistral template needs user and assistant turns to alternate (after an optional system message)");
    if (m.role == "user") {
      out.tpl(" ").ctl("[INST]").tpl(" ");
      if (k == 0 && system) out.msg(system->content).tpl("\n\n");
      out.msg(m.content).tpl(" ").ctl("[/INST]");
    } else if (m.role == "assistant") {
      out.tpl(" ").msg(m.content).ctl("</s>");
    } else {
      raise(i, "the mistral template has a system role only for the first message");
    }
  }
  return out.take();
}

// mistralai/Mistral-7B-Instruct-v0.3 ("v3") and Mistral-Nemo ("v3-tekken", no spaces, replies
// untrimmed) without tools: the system message goes before the LAST message when that is a
// user turn (and nowhere otherwise).
std::vector<ChatSegment> render_mistral_v3(const std::vector<ChatMessage>& messages, bool tekken) {
  size_t first = 0;
  const ChatMessage* system = nullptr;
  if (!messages.empty() && messages[0].role == "system") system = &messages[0], first = 1;
  const char* name = tekken ? "the mistral-v3-tekken template" : "the mistral-v3 template";
  for (size_t i = first; i < messages.size(); ++i)
    if ((messages[i].role == "user") != ((i - first) % 2 == 0))
      raise(i, std::string(name) + " needs user and assistant turns to alternate (after an optional system message)");
  Out out;
  out.ctl("<s>");
  for (size_t i = first; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "user") {
      out.ctl("[INST]").tpl(tekken ? "" : " ");
      if (i + 1 == messages.size() && system) out.msg(system->content).tpl("\n\n");
      out.msg(m.content).ctl("[/INST]");
    } else if (m.role == "assistant") {
      if (tekken) out.msg(m.content);
      else out.tpl(" ").msg(trim(m.content));
      out.ctl("</s>");
    } else {
      raise(i, std::string(name) + " has a system role only for the first message");
    }
  }
  return out.take();
}

void chatml_turn(Out& out, const std::string& role, const std::string& content) {
  out.ctl("<|im_start|>").tpl(role + "\n").msg(content).ctl("<|im_end|>").tpl("\n");
}

std::vector<ChatSegment> render_chatml(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
  Out out;
  for (const ChatMessage& m : messages) chatml_turn(out, m.role, m.content);
  if (add_generation_prompt) out.ctl("<|im_start|>").tpl("assistant\n");
  return out.take();
}

// HuggingFaceH4/zephyr-7b-beta and TinyLlama-1.1B-Chat: the generation prompt is written inside
// the loop, after the last message.
std::vector<ChatSegment> render_zephyr(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
  Out out;
  for (size_t i = 0; i < messages.size(); ++i) {
    out.ctl("<|" + messages[i].role + "|>").tpl("\n").msg(messages[i].content).ctl("</s>").tpl("\n");
    if (i + 1 == messages.size() && add_generation_prompt) out.ctl("<|assistant|>").tpl("\n");
  }
  return out.take();
}

void llama3_turn(Out& out, const std::string& role, const std::string& content) {
  out.ctl("<|start_header_id|>").tpl(role).ctl("<|end_header_id|>").tpl("\n\n").msg(trim(content)).ctl("<|eot_id|>");
}

// meta-llama/Meta-Llama-3-8B-Instruct: BOS, then every message with its content trimmed.
std::vector<ChatSegment> render_llama3(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
  Out out;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (i == 0) out.ctl("<|begin_of_text|>");
    llama3_turn(out, messages[i].role, messages[i].content);
  }
  if (add_generation_prompt) out.ctl("<|start_header_id|>").tpl("assistant").ctl("<|end_header_id|>").tpl("\n\n");
  return out.take();
}

std::string today_date_string() {
  // strftime_now("%d %b %Y") as transformers defines it: the local date, English month.
  static const char* const kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02d %s %04d", tm.tm_mday, kMonths[tm.tm_mon % 12], tm.tm_year + 1900);
  return buf;
}

// meta-llama/Llama-3.1-8B-Instruct and Llama-3.2-{1B,3B}-Instruct without tools: a system
// header always, with the knowledge cutoff and today's date before the (trimmed) system
// message.
std::vector<ChatSegment> render_llama31(const ChatTemplate& t, const std::vector<ChatMessage>& messages,
                                        const ChatOptions& o) {
  const std::string date = !o.date_string.empty() ? o.date_string
                           : t.date_from_clock    ? today_date_string()
                                                  : std::string("26 Jul 2024");
  size_t first = 0;
  std::string system;
  if (!messages.empty() && messages[0].role == "system") system = trim(messages[0].content), first = 1;
  Out out;
  out.ctl("<|begin_of_text|>").ctl("<|start_header_id|>").tpl("system").ctl("<|end_header_id|>");
  out.tpl("\n\nCutting Knowledge Date: December 2023\nToday Date: " + date + "\n\n").msg(system).ctl("<|eot_id|>");
  for (size_t i = first; i < messages.size(); ++i) llama3_turn(out, messages[i].role, messages[i].content);
  if (o.add_generation_prompt) out.ctl("<|start_header_id|>").tpl("assistant").ctl("<|end_header_id|>").tpl("\n\n");
  return out.take();
}

const char* const kQwenSystem = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

// Qwen/Qwen2.5-*-Instruct without tools; Qwen2's template renders the same with its own default.
std::vector<ChatSegment> render_qwen25(const ChatTemplate& t, const std::vector<ChatMessage>& messages,
                                       bool add_generation_prompt) {
  Out out;
  if (!messages.empty() && messages[0].role == "system") chatml_turn(out, "system", messages[0].content);
  else out.ctl("<|im_start|>").tpl("system\n" + (t.default_system.empty() ? kQwenSystem : t.default_system))
           .ctl("<|im_end|>").tpl("\n");
  for (size_t i = 0; i < messages.size(); ++i)
    if (!(i == 0 && messages[i].role == "system")) chatml_turn(out, messages[i].role, messages[i].content);
  if (add_generation_prompt) out.ctl("<|im_start|>").tpl("assistant\n");
  return out.take();
}

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }
bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// Qwen/Qwen3-* without tools. A reply's reasoning (<think>...</think>) is kept only for the
// replies after the last user query; earlier replies keep their answer alone.
std::vector<ChatSegment> render_qwen3(const std::vector<ChatMessage>& messages, const ChatOptions& o) {
  Out out;
  if (!messages.empty() && messages[0].role == "system") chatml_turn(out, "system", messages[0].content);
  // The last user message that is not a tool response.
  size_t last_query = messages.empty() ? 0 : messages.size() - 1;
  for (size_t i = messages.size(); i-- > 0;) {
    const ChatMessage& m = messages[i];
    if (m.role == "user" && !(starts_with(m.content, "<tool_response>") && ends_with(m.content, "</tool_response>"))) {
      last_query = i;
      break;
    }
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "user" || (m.role == "system" && i != 0)) {
      chatml_turn(out, m.role, m.content);
    } else if (m.role == "assistant") {
      std::string content = m.content, reasoning;
      if (const size_t close = m.content.find("</think>"); close != std::string::npos) {
        content = lstrip_nl(m.content.substr(m.content.rfind("</think>") + 8));
        const std::string before = rstrip_nl(m.content.substr(0, close));
        const size_t open = before.rfind("<think>");
        reasoning = lstrip_nl(open == std::string::npos ? before : before.substr(open + 7));
      }
      out.ctl("<|im_start|>").tpl("assistant\n");
      const bool last = i + 1 == messages.size();
      if (i > last_query && (last || !reasoning.empty())) {
        out.ctl("<think>").tpl("\n").msg(strip_nl(reasoning)).tpl("\n").ctl("</think>").tpl("\n\n");
        out.msg(lstrip_nl(content));
      } else {
        out.msg(content);
      }
      out.ctl("<|im_end|>").tpl("\n");
    }
  }
  if (o.add_generation_prompt) {
    out.ctl("<|im_start|>").tpl("assistant\n");
    if (o.enable_thinking && !*o.enable_thinking) out.ctl("<think>").tpl("\n\n").ctl("</think>").tpl("\n\n");
  }
  return out.take();
}

// Base models see plain text: the system prompt first, then the turns, one per line.
std::vector<ChatSegment> render_completion(const std::vector<ChatMessage>& messages) {
  std::vector<const ChatMessage*> order;
  for (const ChatMessage& m : messages)
    if (m.role == "system") order.push_back(&m);
  for (const ChatMessage& m : messages)
    if (m.role != "system") order.push_back(&m);
  Out out;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i) out.tpl("\n");
    out.msg(order[i]->content);
  }
  return out.take();
}

// FNV-1a, for naming a template in a message.
std::string short_hash(const std::string& s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", h);
  return buf;
}

// The system prompt a ChatML template writes when the conversation has none: the literal text
// in '<|im_start|>system\n...<|im_end|>' (Qwen2, Qwen2.5), "" when there is none.
std::string default_system_prompt(const std::string& j) {
  for (const char* open : {"<|im_start|>system\\n", "<|im_start|>system\n"}) {
    for (size_t at = j.find(open); at != std::string::npos; at = j.find(open, at + 1)) {
      const size_t b = at + std::string(open).size();
      const size_t e = j.find("<|im_end|>", b);
      if (e == std::string::npos) break;
      const std::string text = j.substr(b, e - b);
      if (!text.empty() && text.find_first_of("'\"{}\\\n") == std::string::npos) return text;
    }
  }
  return {};
}

std::string first_line(const std::string& s) {
  std::string line = trim(s.substr(0, s.find('\n')));
  if (line.size() > 60) line = line.substr(0, 57) + "...";
  return line;
}

}  // namespace

std::string RenderedChat::text() const {
  std::string out;
  for (const ChatSegment& s : segments) out += s.text;
  return out;
}

RenderedChat render_chat(const ChatTemplate& t, const std::vector<ChatMessage>& messages, const ChatOptions& o) {
  check_roles(messages);
  RenderedChat r;
  switch (t.format) {
    case ChatFormat::Completion: r.segments = render_completion(messages); break;
    case ChatFormat::Llama2: r.segments = render_llama2(messages); break;
    case ChatFormat::Mistral: r.segments = render_mistral(messages); break;
    case ChatFormat::MistralV1: r.segments = render_mistral_v1(messages); break;
    case ChatFormat::ChatML: r.segments = render_chatml(messages, o.add_generation_prompt); break;
    case ChatFormat::Zephyr: r.segments = render_zephyr(messages, o.add_generation_prompt); break;
    case ChatFormat::Llama3:
      r.segments = render_llama3(messages, o.add_generation_prompt || t.always_generation_prompt);
      break;
    case ChatFormat::Llama31: r.segments = render_llama31(t, messages, o); break;
    case ChatFormat::Qwen25: r.segments = render_qwen25(t, messages, o.add_generation_prompt); break;
    case ChatFormat::Qwen3: r.segments = render_qwen3(messages, o); break;
    case ChatFormat::MistralV3: r.segments = render_mistral_v3(messages, false); break;
    case ChatFormat::MistralV3Tekken: r.segments = render_mistral_v3(messages, true); break;
  }
  return r;
}

std::string apply_chat_template(ChatFormat format, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt) {
  ChatOptions o;
  o.add_generation_prompt = add_generation_prompt;
  RenderedChat r = render_chat(chat_template_for(format), messages, o);
  if (!r.segments.empty() && r.segments[0].kind == Kind::Control &&
      (r.segments[0].text == "<s>" || r.segments[0].text == "<|begin_of_text|>"))
    r.segments.erase(r.segments.begin());
  return r.text();
}

ChatTemplate chat_template_for(ChatFormat format) {
  ChatTemplate t;
  t.format = format;
  t.description = chat_format_name(format);
  return t;
}

ChatTemplate recognize_chat_template(const std::string& jinja, const std::string& model_name) {
  const std::string& j = jinja;
  auto from_template = [](ChatFormat f) {
    ChatTemplate t = chat_template_for(f);
    t.description = std::string(chat_format_name(f)) + " (from the model's chat template)";
    return t;
  };
  // Each family's markers are its own; the checks inside a family tell its releases apart.
  if (contains(j, "<|start_header_id|>")) {
    if (contains(j, "Cutting Knowledge Date")) {
      ChatTemplate t = from_template(ChatFormat::Llama31);
      t.date_from_clock = contains(j, "strftime_now");
      return t;
    }
    ChatTemplate t = from_template(ChatFormat::Llama3);
    t.always_generation_prompt = !contains(j, "add_generation_prompt");
    return t;
  }
  if (contains(j, "<|im_start|>")) {
    if (contains(j, "<think>") || contains(j, "enable_thinking")) return from_template(ChatFormat::Qwen3);
    const std::string def = default_system_prompt(j);
    if (def.empty()) return from_template(ChatFormat::ChatML);
    ChatTemplate t = from_template(ChatFormat::Qwen25);
    if (def != kQwenSystem) {
      t.default_system = def;
      t.description = "qwen2.5 (from the model's chat template: ChatML with the default system prompt \"" + def + "\")";
    }
    return t;
  }
  if (contains(j, "<|user|>")) return from_template(ChatFormat::Zephyr);
  if (contains(j, "[INST]") && !contains(j, "[SYSTEM_PROMPT]")) {
    if (contains(j, "<<SYS>>")) return from_template(ChatFormat::Llama2);
    if (contains(j, "loop.last and system_message is defined"))
      return from_template(contains(j, "\"[INST] \" + system_message") ? ChatFormat::MistralV3
                                                                      : ChatFormat::MistralV3Tekken);
    if (contains(j, "' [INST] '")) return from_template(ChatFormat::Mistral);
    return from_template(ChatFormat::MistralV1);
  }
  if (!trim(j).empty()) {
    ChatTemplate t = chat_template_for(ChatFormat::Completion);
    t.recognized = false;
    t.description = "unrecognised chat template \"" + first_line(j) + "\" (fnv1a " + short_hash(j) +
                    "): prompts are sent as plain completion text";
    return t;
  }

  // No template: the name is the only hint (llama2.c files, Hugging Face folders without
  // tokenizer_config.json). Only names that say "chat"/"instruct" are chat models.
  const std::string n = lower(model_name);
  const bool chat = contains(n, "chat") || contains(n, "instruct");
  auto from_name = [](ChatFormat f) {
    ChatTemplate t = chat_template_for(f);
    t.description = std::string(chat_format_name(f)) + " (from the model's name; the model has no chat template)";
    return t;
  };
  if (contains(n, "zephyr")) return from_name(ChatFormat::Zephyr);
  if (contains(n, "tinyllama") && chat) return from_name(ChatFormat::Zephyr);
  if (contains(n, "qwen3")) return from_name(ChatFormat::Qwen3);
  if (contains(n, "qwen2.5") || contains(n, "qwen2_5")) return from_name(ChatFormat::Qwen25);
  if (contains(n, "chatml") || contains(n, "openhermes") || contains(n, "qwen")) return from_name(ChatFormat::ChatML);
  if ((contains(n, "llama-3.1") || contains(n, "llama-3.2") || contains(n, "llama3.1") || contains(n, "llama3.2")) &&
      chat)
    return from_name(ChatFormat::Llama31);
  if ((contains(n, "llama-3") || contains(n, "llama3")) && chat) return from_name(ChatFormat::Llama3);
  if (contains(n, "mistral") && chat) return from_name(ChatFormat::Mistral);
  if ((contains(n, "llama-2") || contains(n, "llama2")) && chat) return from_name(ChatFormat::Llama2);
  ChatTemplate t = chat_template_for(ChatFormat::Completion);
  t.description = "completion (the model has no chat template)";
  return t;
}

ChatFormat detect_chat_format(const std::string& jinja_template_text, const std::string& model_name) {
  return recognize_chat_template(jinja_template_text, model_name).format;
}

bool chat_supports_thinking(ChatFormat format) { return format == ChatFormat::Qwen3; }

const char* chat_format_name(ChatFormat format) {
  switch (format) {
    case ChatFormat::Completion: return "completion";
    case ChatFormat::Llama2: return "llama2";
    case ChatFormat::ChatML: return "chatml";
    case ChatFormat::Zephyr: return "zephyr";
    case ChatFormat::Llama3: return "llama3";
    case ChatFormat::Mistral: return "mistral";
    case ChatFormat::MistralV1: return "mistral-v1";
    case ChatFormat::Llama31: return "llama3.1";
    case ChatFormat::Qwen25: return "qwen2.5";
    case ChatFormat::Qwen3: return "qwen3";
    case ChatFormat::MistralV3: return "mistral-v3";
    case ChatFormat::MistralV3Tekken: return "mistral-v3-tekken";
  }
  return "completion";
}

std::vector<ChatFormat> all_chat_formats() {
  return {ChatFormat::Completion, ChatFormat::Llama2, ChatFormat::ChatML,    ChatFormat::Zephyr,
          ChatFormat::Llama3,     ChatFormat::Mistral, ChatFormat::MistralV1, ChatFormat::Llama31,
          ChatFormat::Qwen25,     ChatFormat::Qwen3,   ChatFormat::MistralV3, ChatFormat::MistralV3Tekken};
}

bool chat_format_from_name(const std::string& name, ChatFormat* format) {
  const std::string n = lower(trim(name));
  for (ChatFormat f : all_chat_formats()) {
    if (n == chat_format_name(f)) {
      if (format) *format = f;
      return true;
    }
  }
  return false;
}

std::vector<std::string> chat_stop_strings(ChatFormat format) {
  // The text that closes an assistant turn, and the start of the next user turn for models
  // that skip the closing marker. The control tokens themselves (</s>, <|eot_id|>, <|im_end|>)
  // also stop generation as the tokenizer's end-of-generation ids.
  switch (format) {
    case ChatFormat::Completion: return {};
    case ChatFormat::Llama2:
    case ChatFormat::Mistral:
    case ChatFormat::MistralV1:
    case ChatFormat::MistralV3:
    case ChatFormat::MistralV3Tekken: return {"</s>", "[INST]"};
    case ChatFormat::ChatML:
    case ChatFormat::Qwen25:
    case ChatFormat::Qwen3: return {"<|im_end|>", "<|im_start|>", "<|endoftext|>"};
    case ChatFormat::Zephyr: return {"</s>", "<|user|>"};
    case ChatFormat::Llama3:
    case ChatFormat::Llama31: return {"<|eot_id|>", "<|start_header_id|>", "<|eom_id|>"};
  }
  return {};
}

}  // namespace llmwb
