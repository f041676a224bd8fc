#include "token_text.h"

namespace llmwb::ui {

QString display_token(const QStringList& vocabulary, int id) {
  if (id < 0 || id >= vocabulary.size() || vocabulary[id].isEmpty()) return QString("#%1").arg(id);
  QString s = vocabulary[id];
  // The engine shows control bytes as \xNN (one chip, one line); newline and tab get symbols.
  s.replace('\n', QChar(0x21B5)).replace("\\x0A", QChar(0x21B5)).replace('\t', QChar(0x2192));
  s.replace("\\x09", QChar(0x2192)).replace('\r', QString()).replace("\\x0D", QString());
  if (s.startsWith(' ')) s[0] = QChar(0x00B7);
  return s;
}

QString token_piece(const QStringList& vocabulary, int id) {
  if (id < 0 || id >= vocabulary.size()) return QString("#%1").arg(id);
  QString s = vocabulary[id];
  return s.replace("\\x0A", "\n").replace("\\x09", "\t").replace("\\x0D", QString());
}

}  // namespace llmwb::ui
