#include "model_defaults.h"

#include <QCryptographicHash>
#include <QSettings>

namespace llmwb::ui::model_defaults {

QString key(const QString& model_path) {
  if (model_path.isEmpty()) return {};
  const QByteArray hash = QCryptographicHash::hash(model_path.toUtf8(), QCryptographicHash::Sha1);
  return "models/" + QString::fromLatin1(hash.toHex().left(16));
}

int context_length(const QString& model_path) {
  if (model_path.isEmpty()) return 0;
  return QSettings().value(key(model_path) + "/max_model_len", 0).toInt();
}

void set_context_length(const QString& model_path, int max_model_len) {
  if (model_path.isEmpty()) return;
  QSettings s;
  s.setValue(key(model_path) + "/path", model_path);
  s.setValue(key(model_path) + "/max_model_len", max_model_len);
}

}  // namespace llmwb::ui::model_defaults
