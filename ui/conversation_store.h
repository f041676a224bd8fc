// conversation_store.h — conversations as one JSON file each under the user's data directory
// (QStandardPaths::AppDataLocation/conversations). Files are written atomically (QSaveFile),
// so a crash or a full disk never leaves a conversation half-written.
#pragma once

#include <QString>

#include <vector>

#include "conversation.h"

namespace llmwb::ui {

class ConversationStore {
 public:
  // `dir` empty: the user's data directory.
  explicit ConversationStore(QString dir = {});

  const QString& dir() const { return dir_; }
  QString path_for(const QString& id) const;
  // Newest first. Files that do not parse are skipped and named in `errors`.
  std::vector<Conversation> load_all(QStringList* errors = nullptr) const;
  // Throws llmwb::Error on I/O or parse failure.
  Conversation load(const QString& id) const;
  // Throws llmwb::Error on I/O failure, and rather than replace a file of that id that cannot
  // be read.
  void save(const Conversation& c) const;
  void remove(const QString& id) const;

 private:
  QString dir_;
};

}  // namespace llmwb::ui
