#include "core/output_processor.h"

#include <algorithm>

namespace llmwb {

namespace {

// Longest suffix of `text` that is a proper prefix of some stop string: text that must be held
// back from streaming because the next token may complete a stop string.
size_t stop_holdback(const std::string& text, const std::vector<std::string>& stops) {
  size_t hold = 0;
  for (const auto& s : stops)
    for (size_t k = std::min(s.size() - 1, text.size()); k > hold; --k)
      if (text.compare(text.size() - k, k, s, 0, k) == 0) {
        hold = k;
        break;
      }
  return hold;
}

// Never split a UTF-8 character when holding text back.
size_t utf8_floor(const std::string& s, size_t n) {
  while (n > 0 && n < s.size() && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return n;
}

}  // namespace

std::optional<StopDecision> OutputProcessor::append(Request& r, SeqState& s, int token, float prob,
                                                    bool from_draft) const {
  Sequence& q = *s.seq;
  q.tokens.push_back(token);
  s.out.token_ids.push_back(token);
  s.out.token_probs.push_back(prob);
  s.out.token_from_draft.push_back(from_draft ? 1 : 0);
  r.changed = true;
  if (r.t_first < 0) r.t_first = seconds_since(r.t_added);
  const SamplingParams& p = r.params;
  if (!p.ignore_eos && tok_.is_eog(token)) {
    s.out.token_text_end.push_back(static_cast<uint32_t>(s.out.text.size()));
    return StopDecision{FinishReason::Stop, "eos"};
  }
  const size_t before = s.out.text.size();
  s.out.text += s.detok->push(token);
  s.out.token_text_end.push_back(static_cast<uint32_t>(s.out.text.size()));
  if (!p.stop.empty()) {
    size_t max_stop = 0;
    for (const auto& st : p.stop) max_stop = std::max(max_stop, st.size());
    const size_t from = before >= max_stop ? before - max_stop + 1 : 0;
    size_t best = std::string::npos;
    std::string which;
    for (const auto& st : p.stop) {
      const size_t at = s.out.text.find(st, from);
      if (at != std::string::npos && at < best) best = at, which = st;
    }
    if (best != std::string::npos) {
      s.out.text.resize(best);
      return StopDecision{FinishReason::Stop, which};
    }
  }
  if (q.num_tokens() >= q.max_total_tokens) return StopDecision{FinishReason::Length, {}};
  return std::nullopt;
}

void OutputProcessor::close(SeqState& s, FinishReason why, const std::string& stop_reason) const {
  s.out.finish_reason = why;
  s.out.stop_reason = stop_reason;
  if (why != FinishReason::Stop || stop_reason.empty() || stop_reason == "eos") {
    s.out.text += s.detok->flush();
    // Bytes the detokenizer held belong to the last token with text (the one before an
    // end-of-generation token, whose own text is empty).
    const size_t n = s.out.token_text_end.size();
    const size_t from = stop_reason == "eos" && n > 1 ? n - 2 : (n > 0 ? n - 1 : 0);
    for (size_t i = from; i < n; ++i) s.out.token_text_end[i] = static_cast<uint32_t>(s.out.text.size());
  }
}

RequestOutput OutputProcessor::make_output(Request& r) const {
  RequestOutput o;
  o.request_id = r.id;
  o.prompt = r.prompt;
  o.prompt_token_ids = r.prompt_ids;
  o.error = r.error;
  o.time_to_first_token = std::max(0.0, r.t_first);
  bool all_done = r.seqs.size() == static_cast<size_t>(r.params.n) || !r.error.empty();
  for (auto& sp : r.seqs) {
    SeqState& s = *sp;
    CompletionOutput c = s.out;
    // Stream everything except text that might still turn into a stop string.
    size_t upto = s.done ? s.out.text.size()
                         : utf8_floor(s.out.text, s.out.text.size() - stop_holdback(s.out.text, r.params.stop));
    if (upto < s.emitted) upto = s.emitted;
    c.delta = s.out.text.substr(s.emitted, upto - s.emitted);
    s.emitted = upto;
    if (!s.done) c.text = s.out.text.substr(0, upto);
    all_done = all_done && s.done;
    o.num_cached_prompt_tokens = std::max(o.num_cached_prompt_tokens, s.seq->num_cached_tokens);
    o.outputs.push_back(std::move(c));
  }
  o.finished = all_done;
  o.paused = r.paused && !all_done;
  o.total_time = all_done ? r.t_done : seconds_since(r.t_added);
  return o;
}

}  // namespace llmwb
