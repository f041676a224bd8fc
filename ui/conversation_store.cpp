#include "conversation_store.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QSaveFile>
#include <QStandardPaths>

#include <algorithm>

#include "llmwb/errors.h"

namespace llmwb::ui {

ConversationStore::ConversationStore(QString dir) : dir_(std::move(dir)) {
  if (dir_.isEmpty())
    dir_ = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + "/conversations";
}

QString ConversationStore::path_for(const QString& id) const { return dir_ + "/" + id + ".json"; }

Conversation ConversationStore::load(const QString& id) const {
  const QString path = path_for(id);
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) throw Error(path.toStdString(), "cannot read: " + f.errorString().toStdString());
  QJsonParseError err{};
  const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &err);
  if (err.error != QJsonParseError::NoError)
    throw Error(path.toStdString(), "not JSON at offset " + std::to_string(err.offset) + ": " + err.errorString().toStdString());
  if (!doc.isObject()) throw Error(path.toStdString(), "expected a JSON object");
  return Conversation::from_json(doc.object(), path);
}

std::vector<Conversation> ConversationStore::load_all(QStringList* errors) const {
  std::vector<Conversation> out;
  const QDir d(dir_);
  for (const QString& name : d.entryList({"*.json"}, QDir::Files)) {
    try {
      out.push_back(load(QFileInfo(name).completeBaseName()));
    } catch (const std::exception& e) {
      if (errors) *errors << QString::fromStdString(e.what());
    }
  }
  std::sort(out.begin(), out.end(), [](const Conversation& a, const Conversation& b) { return a.updated > b.updated; });
  return out;
}

void ConversationStore::save(const Conversation& c) const {
  if (!QDir().mkpath(dir_)) throw Error(dir_.toStdString(), "cannot create the folder");
  const QString path = path_for(c.id);
  // A file there that cannot be read (cut short, hand-edited, from another version) may still
  // be wanted back: it is never replaced. (load_all() lists it with its reason.)
  if (QFile::exists(path)) {
    try {
      (void)load(c.id);
    } catch (const std::exception&) {
      throw Error(path.toStdString(), "exists but cannot be read as a conversation, so it is not overwritten");
    }
  }
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly)) throw Error(path.toStdString(), "cannot write: " + f.errorString().toStdString());
  f.write(QJsonDocument(c.to_json()).toJson());
  if (!f.commit()) throw Error(path.toStdString(), "cannot write: " + f.errorString().toStdString());
}

void ConversationStore::remove(const QString& id) const { QFile::remove(path_for(id)); }

}  // namespace llmwb::ui
