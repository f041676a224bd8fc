#include "message_stats.h"

#include <QJsonArray>
#include <QObject>

namespace llmwb::ui {

bool valid_spans(const TextSpans& spans, qsizetype size) {
  int previous_end = 0;
  for (const auto& [start, end] : spans) {
    if (start < previous_end || end <= start || end > size) return false;
    previous_end = end;
  }
  return true;
}

void append_span(TextSpans& spans, int start, int end) {
  if (end <= start) return;
  if (!spans.empty() && spans.back().second == start) spans.back().second = end;
  else spans.emplace_back(start, end);
}

double MessageStats::tokens_per_second() const {
  const double decode = total_s - ttft_s;
  if (output_tokens > 1 && decode > 0.0) return (output_tokens - 1) / decode;
  return total_s > 0.0 ? output_tokens / total_s : 0.0;
}

QString MessageStats::footer() const {
  QStringList parts;
  parts << (output_tokens == 1 ? QObject::tr("1 token") : QObject::tr("%1 tokens").arg(output_tokens));
  if (thinking_tokens > 0) parts << QObject::tr("%1 thinking").arg(thinking_tokens);
  // A reply without timings (written by hand, imported) shows none rather than zeros.
  if (total_s > 0.0) {
    const double ttft_ms = ttft_s * 1000.0;
    parts << QObject::tr("TTFT %1 ms").arg(ttft_ms, 0, 'f', ttft_ms < 10.0 ? 1 : 0);
    parts << QObject::tr("%1 tok/s").arg(tokens_per_second(), 0, 'f', 1);
  }
  if (drafted_tokens > 0)
    parts << QObject::tr("%1 of %2 draft tokens accepted (%3%), %4 per verification")
                 .arg(draft_tokens)
                 .arg(drafted_tokens)
                 .arg(100.0 * draft_tokens / drafted_tokens, 0, 'f', 0)
                 .arg(mean_acceptance_length, 0, 'f', 2);
  else if (draft_tokens > 0)  // written before the guesses were counted
    parts << QObject::tr("%1 from accepted drafts (%2 per verification)")
                 .arg(draft_tokens)
                 .arg(mean_acceptance_length, 0, 'f', 2);
  if (!stop_reason.isEmpty()) parts << stop_reason;
  if (dropped_turns > 0) parts << (dropped_turns == 1 ? QObject::tr("1 oldest turn left out of the prompt") : QObject::tr("%1 oldest turns left out of the prompt").arg(dropped_turns));
  if (!config.isEmpty()) parts << config;
  return parts.join(QStringLiteral(" · "));
}

QJsonObject MessageStats::to_json() const {
  QJsonObject o{{"prompt_tokens", prompt_tokens}, {"output_tokens", output_tokens}, {"ttft_s", ttft_s},
                {"total_s", total_s},             {"stop_reason", stop_reason},     {"config", config}};
  if (thinking_tokens > 0) o["thinking_tokens"] = thinking_tokens;
  if (dropped_turns > 0) o["dropped_turns"] = dropped_turns;
  if (draft_tokens > 0 || drafted_tokens > 0) {
    o["draft_tokens"] = draft_tokens;
    o["drafted_tokens"] = drafted_tokens;
    o["mean_acceptance_length"] = mean_acceptance_length;
  }
  if (!draft_spans.empty()) {
    QJsonArray spans;
    for (const auto& [start, end] : draft_spans) spans.append(QJsonArray{start, end});
    o["draft_spans"] = spans;
  }
  return o;
}

MessageStats MessageStats::from_json(const QJsonObject& o) {
  MessageStats s;
  s.prompt_tokens = o.value("prompt_tokens").toInt();
  s.output_tokens = o.value("output_tokens").toInt();
  s.thinking_tokens = o.value("thinking_tokens").toInt();
  s.ttft_s = o.value("ttft_s").toDouble();
  s.total_s = o.value("total_s").toDouble();
  s.stop_reason = o.value("stop_reason").toString();
  s.config = o.value("config").toString();
  s.draft_tokens = o.value("draft_tokens").toInt();
  s.drafted_tokens = o.value("drafted_tokens").toInt();
  s.mean_acceptance_length = o.value("mean_acceptance_length").toDouble();
  // Checked against the message by Conversation::from_json: anything malformed becomes a span
  // valid_spans() refuses.
  if (o.contains("draft_spans")) {
    const QJsonValue v = o.value("draft_spans");
    if (!v.isArray()) s.draft_spans.emplace_back(-1, -1);
    for (const QJsonValue& span : v.toArray()) {
      const QJsonArray pair = span.toArray();
      const bool ok = span.isArray() && pair.size() == 2 && pair[0].isDouble() && pair[1].isDouble();
      s.draft_spans.emplace_back(ok ? pair[0].toInt(-1) : -1, ok ? pair[1].toInt(-1) : -1);
    }
  }
  s.dropped_turns = o.value("dropped_turns").toInt();
  return s;
}

}  // namespace llmwb::ui
