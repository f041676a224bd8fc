// token_text.h — showing one token's text in chips, tooltips and heatmap axes.
#pragma once

#include <QString>
#include <QStringList>

namespace llmwb::ui {

// The vocabulary entry for `id` with invisible characters made visible (newline as ↵, tab as
// →, a leading space as ·); "#id" when the id is outside the vocabulary or the piece is empty.
QString display_token(const QStringList& vocabulary, int id);

// The entry as text to read in running prose (newline and tab as themselves).
QString token_piece(const QStringList& vocabulary, int id);

}  // namespace llmwb::ui
