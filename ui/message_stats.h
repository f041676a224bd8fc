// message_stats.h — how one assistant reply was produced: its tokens, time to first token,
// speed, how it ended and the engine configuration, shown in the message's footer and saved
// with it.
#pragma once

#include <QJsonObject>
#include <QString>

#include <utility>
#include <vector>

namespace llmwb::ui {

// Ranges of a message's text, [start, end) in UTF-16 code units, ascending and disjoint.
using TextSpans = std::vector<std::pair<int, int>>;
// True when `spans` are ascending, disjoint, non-empty ranges inside a text of `size` units.
bool valid_spans(const TextSpans& spans, qsizetype size);
// Appends [start, end) to `spans`, joined to the last one when they touch.
void append_span(TextSpans& spans, int start, int end);

struct MessageStats {
  int prompt_tokens = 0;
  int output_tokens = 0;
  int thinking_tokens = 0;   // of output_tokens, those inside <think>…</think>
  double ttft_s = 0.0;       // time to first token
  double total_s = 0.0;
  QString stop_reason;       // "stop", "length", "abort"
  QString config;            // model, backend, template and sampling that produced the reply
  int dropped_turns = 0;     // oldest turns left out of the prompt to fit the context
  // Speculative decoding: of output_tokens, the draft guesses the model accepted, the guesses
  // it verified (0 in files written before it was kept), and the mean tokens one verification
  // round yielded (0: no speculation).
  int draft_tokens = 0;
  int drafted_tokens = 0;
  double mean_acceptance_length = 0.0;
  // Where the accepted guesses' text is in the message's content (the chat marks it). Saved as
  // "draft_spans": [[start, end], ...]; absent in older files and without speculation.
  TextSpans draft_spans;

  bool empty() const { return output_tokens == 0 && config.isEmpty(); }
  // Decode speed: tokens after the first over the time after the first.
  double tokens_per_second() const;
  // The footer line: "24 tokens · TTFT 12 ms · 310 tok/s · 14 of 20 draft tokens accepted (70%),
  // 2.40 per verification · stop · stories260K, cpu, …".
  QString footer() const;

  QJsonObject to_json() const;
  static MessageStats from_json(const QJsonObject& o);
  bool operator==(const MessageStats& o) const = default;
};

}  // namespace llmwb::ui
