// chat_token_ids: a rendered chat -> token ids, with control tokens only where the template
// wrote them (llmwb/chat_template.h).
#include <map>

#include "llmwb/chat_template.h"

namespace llmwb {

std::vector<int> chat_token_ids(const RenderedChat& chat, const ChatTokenizer& tok) {
  // A marker is a control token when special parsing makes it one id that plain encoding
  // does not give ("<|im_start|>" in Qwen's vocabulary; "[INST]" only in Mistral v3's).
  std::map<std::string, int> control;
  auto control_id = [&](const std::string& marker) {
    auto it = control.find(marker);
    if (it != control.end()) return it->second;
    const std::vector<int> special = tok.encode(marker, true);
    const int id = special.size() == 1 && tok.encode(marker, false) != special ? special[0] : -1;
    control.emplace(marker, id);
    return id;
  };

  std::vector<int> ids;
  std::string text;  // plain text not yet encoded: neighbouring stretches encode together
  auto flush = [&] {
    if (text.empty()) return;
    const std::vector<int> t = tok.encode(text, false);
    ids.insert(ids.end(), t.begin(), t.end());
    text.clear();
  };
  bool template_bos = false;
  for (size_t i = 0; i < chat.segments.size(); ++i) {
    const ChatSegment& s = chat.segments[i];
    const int id = s.kind == ChatSegment::Kind::Control ? control_id(s.text) : -1;
    if (id < 0) {
      text += s.text;
      continue;
    }
    flush();
    if (i == 0 && tok.bos.size() == 1 && id == tok.bos[0]) template_bos = true;
    ids.push_back(id);
  }
  flush();
  if (!template_bos) ids.insert(ids.begin(), tok.bos.begin(), tok.bos.end());
  return ids;
}

}  // namespace llmwb
