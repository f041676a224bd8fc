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

void Conversation::adopt_loose_messages() {
  if (path.size() > messages.size()) path.resize(messages.size());
  for (size_t i = path.size(); i < messages.size(); ++i) {
    Node n;
    n.message = messages[i];
    n.parent = path.empty() ? -1 : path.back();
    if (n.parent >= 0) nodes[size_t(n.parent)].active_child = int(nodes.size());
    path.push_back(int(nodes.size()));
    nodes.push_back(n);
  }
}

void Conversation::sync_messages() {
  messages.clear();
  for (int n : path) messages.push_back(nodes[size_t(n)].message);
}

void Conversation::append(const ChatMessage& m, const MessageStats& stats) {
  adopt_loose_messages();
  Node n;
  n.message = m;
  n.stats = stats;
  n.parent = path.empty() ? -1 : path.back();
  if (n.parent >= 0) nodes[size_t(n.parent)].active_child = int(nodes.size());
  path.push_back(int(nodes.size()));
  nodes.push_back(n);
  messages.push_back(m);
}

void Conversation::truncate(size_t n) {
  adopt_loose_messages();
  if (n >= path.size()) return;
  path.resize(n);
  sync_messages();
}

void Conversation::extend() {
  adopt_loose_messages();
  int next = -1;
  if (path.empty()) {
    // The first message shown is the newest first message (a fork at the first turn).
    for (size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].parent == -1) next = int(i);
  } else {
    next = nodes[size_t(path.back())].active_child;
  }
  while (next >= 0 && next < int(nodes.size())) {
    path.push_back(next);
    next = nodes[size_t(next)].active_child;
  }
  sync_messages();
}

std::vector<int> Conversation::siblings_of(int node) const {
  std::vector<int> out;
  const int parent = nodes[size_t(node)].parent;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].parent == parent) out.push_back(int(i));
  return out;
}

std::pair<int, int> Conversation::branch_at(size_t i) const {
  if (i >= path.size() || i >= messages.size()) return {0, 1};
  const std::vector<int> s = siblings_of(path[i]);
  for (size_t k = 0; k < s.size(); ++k)
    if (s[k] == path[i]) return {int(k), int(s.size())};
  return {0, 1};
}

void Conversation::select_branch(size_t i, int index) {
  adopt_loose_messages();
  if (i >= path.size()) return;
  const std::vector<int> s = siblings_of(path[i]);
  if (index < 0 || index >= int(s.size())) return;
  const int parent = nodes[size_t(path[i])].parent;
  if (parent >= 0) nodes[size_t(parent)].active_child = s[size_t(index)];
  path.resize(i);
  path.push_back(s[size_t(index)]);
  for (int next = nodes[size_t(path.back())].active_child; next >= 0; next = nodes[size_t(next)].active_child)
    path.push_back(next);
  sync_messages();
}

const MessageStats& Conversation::stats_at(size_t i) const {
  static const MessageStats none;
  if (i >= path.size() || i >= messages.size()) return none;
  return nodes[size_t(path[i])].stats;
}

QJsonObject Conversation::to_json() const {
  Conversation c = *this;
  c.adopt_loose_messages();
  QJsonArray msgs;  // the active path, as version 1 wrote it
  for (const auto& m : c.messages)
    msgs.append(QJsonObject{{"role", QString::fromStdString(m.role)}, {"content", QString::fromStdString(m.content)}});
  QJsonArray tree;
  for (const Node& n : c.nodes) {
    QJsonObject o{{"role", QString::fromStdString(n.message.role)},
                  {"content", QString::fromStdString(n.message.content)},
                  {"parent", n.parent},
                  {"active_child", n.active_child}};
    if (!n.stats.empty()) o["stats"] = n.stats.to_json();
    tree.append(o);
  }
  QJsonArray path_json;
  for (int p : c.path) path_json.append(p);
  return QJsonObject{{"version", 2},
                     {"id", id},
                     {"title", title},
                     {"system_prompt", system_prompt},
                     {"format", format},
                     {"created", created.toString(Qt::ISODateWithMs)},
                     {"updated", updated.toString(Qt::ISODateWithMs)},
                     {"messages", msgs},
                     {"nodes", tree},
                     {"path", path_json}};
}

namespace {
ChatMessage read_message(const QJsonObject& m, const std::string& w) {
  const QString role = m.value("role").toString();
  if (role != "user" && role != "assistant" && role != "system")
    throw Error(w, "message role must be user, assistant or system, not '" + role.toStdString() + "'");
  if (!m.value("content").isString()) throw Error(w, "message 'content' must be a string");
  return {role.toStdString(), m.value("content").toString().toStdString()};
}
}  // namespace

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
  if (!o.contains("nodes")) {  // version 1: one branch
    for (const auto& v : o.value("messages").toArray()) c.messages.push_back(read_message(v.toObject(), w));
    c.adopt_loose_messages();
    return c;
  }
  if (!o.value("nodes").isArray() || !o.value("path").isArray()) throw Error(w, "'nodes' and 'path' must be arrays");
  const QJsonArray tree = o.value("nodes").toArray();
  for (qsizetype i = 0; i < tree.size(); ++i) {
    const QJsonObject n = tree[i].toObject();
    Node node;
    node.message = read_message(n, w);
    node.parent = n.value("parent").toInt(-1);
    node.active_child = n.value("active_child").toInt(-1);
    node.stats = MessageStats::from_json(n.value("stats").toObject());
    if (node.parent < -1 || node.parent >= int(i))
      throw Error(w, "node " + std::to_string(i) + ": 'parent' must name an earlier node");
    if (node.active_child < -1 || node.active_child >= int(tree.size()))
      throw Error(w, "node " + std::to_string(i) + ": 'active_child' out of range");
    if (!valid_spans(node.stats.draft_spans, QString::fromStdString(node.message.content).size()))
      throw Error(w, "node " + std::to_string(i) + ": 'stats.draft_spans' must be ascending, disjoint "
                     "[start, end] pairs inside the message's content");
    c.nodes.push_back(node);
  }
  for (const auto& v : o.value("path").toArray()) {
    const int p = v.toInt(-2);
    const int expected_parent = c.path.empty() ? -1 : c.path.back();
    if (p < 0 || p >= int(c.nodes.size()) || c.nodes[size_t(p)].parent != expected_parent)
      throw Error(w, "'path' must follow parent links from a first message");
    c.path.push_back(p);
  }
  c.sync_messages();
  return c;
}

QString Conversation::to_markdown() const {
  QString md = "# " + (title.isEmpty() ? derived_title() : title) + "\n\n";
  if (!system_prompt.isEmpty()) md += "> **System:** " + QString(system_prompt).replace("\n", "\n> ") + "\n\n";
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto& m = messages[i];
    md += m.role == "user" ? "**User:**\n\n" : "**Assistant:**\n\n";
    md += QString::fromStdString(m.content) + "\n\n";
    const MessageStats& s = stats_at(i);
    if (!s.empty()) md += "<sub>" + s.footer().toHtmlEscaped() + "</sub>\n\n";
  }
  return md;
}

bool Conversation::operator==(const Conversation& o) const {
  if (messages.size() != o.messages.size()) return false;
  for (size_t i = 0; i < messages.size(); ++i)
    if (messages[i].role != o.messages[i].role || messages[i].content != o.messages[i].content) return false;
  Conversation a = *this, b = o;
  a.adopt_loose_messages();
  b.adopt_loose_messages();
  if (a.nodes.size() != b.nodes.size() || a.path != b.path) return false;
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const Node &x = a.nodes[i], &y = b.nodes[i];
    if (x.message.role != y.message.role || x.message.content != y.message.content || x.parent != y.parent ||
        x.active_child != y.active_child || !(x.stats == y.stats))
      return false;
  }
  return id == o.id && title == o.title && system_prompt == o.system_prompt && format == o.format &&
         created == o.created && updated == o.updated;
}

}  // namespace llmwb::ui
