#include "conversation.h"

#include <QJsonArray>
#include <QUuid>

#include "llmwb/errors.h"

namespace llmwb::ui {

Conversation Conversation::make_new() {
  Conversation c;
  c.id = QUuid::createUuid().toString(QUuid::WithoutBraces);
  c.created = c.updated = QDateTime::currentDateTimeUtc();
  return c;
}

std::vector<ChatMessage> Conversation::template_messages() const {
  std::vector<ChatMessage> out;
  if (!system_prompt.trimmed().isEmpty()) out.push_back({"system", system_prompt.toStdString()});
  out.insert(out.end(), messages.begin(), messages.end());
  return out;
}

QString Conversation::derived_title() const {
  for (const auto& m : messages) {
    if (m.role != "user") continue;
    QString t = QString::fromStdString(m.content).simplified();
    return t.size() > 48 ? t.left(47) + "…" : t;
  }
  return QObject::tr("New chat");
}

QJsonObject Conversation::to_json() const {
  QJsonArray msgs;
  for (const auto& m : messages)
    msgs.append(QJsonObject{{"role", QString::fromStdString(m.role)}, {"content", QString::fromStdString(m.content)}});
  return QJsonObject{{"version", 1},
                     {"id", id},
                     {"title", title},
                     {"system_prompt", system_prompt},
                     {"format", format},
                     {"created", created.toString(Qt::ISODateWithMs)},
                     {"updated", updated.toString(Qt::ISODateWithMs)},
                     {"messages", msgs}};
}

Conversation Conversation::from_json(const QJsonObject& o, const QString& where) {
  const std::string w = where.toStdString();
  if (!o.value("id").isString() || o.value("id").toString().isEmpty()) throw Error(w, "missing 'id'");
  if (!o.value("messages").isArray()) throw Error(w, "'messages' must be an array");
  Conversation c;
  c.id = o.value("id").toString();
  c.title = o.value("title").toString();
  c.system_prompt = o.value("system_prompt").toString();
  c.format = o.value("format").toString("auto");
  c.created = QDateTime::fromString(o.value("created").toString(), Qt::ISODateWithMs);
  c.updated = QDateTime::fromString(o.value("updated").toString(), Qt::ISODateWithMs);
  for (const auto& v : o.value("messages").toArray()) {
    const QJsonObject m = v.toObject();
    const QString role = m.value("role").toString();
    if (role != "user" && role != "assistant" && role != "system")
      throw Error(w, "message role must be user, assistant or system, not '" + role.toStdString() + "'");
    if (!m.value("content").isString()) throw Error(w, "message 'content' must be a string");
    c.messages.push_back({role.toStdString(), m.value("content").toString().toStdString()});
  }
  return c;
}

QString Conversation::to_markdown() const {
  QString md = "# " + (title.isEmpty() ? derived_title() : title) + "\n\n";
  if (!system_prompt.isEmpty()) md += "> **System:** " + QString(system_prompt).replace("\n", "\n> ") + "\n\n";
  for (const auto& m : messages) {
    md += m.role == "user" ? "**User:**\n\n" : "**Assistant:**\n\n";
    md += QString::fromStdString(m.content) + "\n\n";
  }
  return md;
}

bool Conversation::operator==(const Conversation& o) const {
  if (messages.size() != o.messages.size()) return false;
  for (size_t i = 0; i < messages.size(); ++i)
    if (messages[i].role != o.messages[i].role || messages[i].content != o.messages[i].content) return false;
  return id == o.id && title == o.title && system_prompt == o.system_prompt && format == o.format &&
         created == o.created && updated == o.updated;
}

}  // namespace llmwb::ui
