// message_stats.h — how one assistant reply was produced: its tokens, time to first token,
// speed, how it ended and the engine configuration, shown in the message's footer and saved
// with it.
#pragma once

#include <QJsonObject>
#include <QString>

namespace llmwb::ui {

struct MessageStats {
  int prompt_tokens = 0;
  int output_tokens = 0;
  int thinking_tokens = 0;   // of output_tokens, those inside <think>…</think>
  double ttft_s = 0.0;       // time to first token
  double total_s = 0.0;
  QString stop_reason;       // "stop", "length", "abort"
  QString config;            // model, backend, template and sampling that produced the reply
  int dropped_turns = 0;     // oldest turns left out of the prompt to fit the context
  // Speculative decoding: of output_tokens, the draft guesses the model accepted, and the mean
  // tokens one verification round yielded (0: no speculation).
  int draft_tokens = 0;
  double mean_acceptance_length = 0.0;

  bool empty() const { return output_tokens == 0 && config.isEmpty(); }
  // Decode speed: tokens after the first over the time after the first.
  double tokens_per_second() const;
  // The footer line: "24 tokens · TTFT 12 ms · 310 tok/s · stop · stories260K, cpu, …".
  QString footer() const;

  QJsonObject to_json() const;
  static MessageStats from_json(const QJsonObject& o);
  bool operator==(const MessageStats& o) const = default;
};

}  // namespace llmwb::ui
