// token_chips_view.h — generated tokens as chips; the chip's tint is the token's probability
// and hovering shows the token id and probability.
#pragma once

#include <QListWidget>
#include <QStringList>

#include <vector>

namespace llmwb::ui {

class TokenChipsView : public QListWidget {
  Q_OBJECT

 public:
  explicit TokenChipsView(QWidget* parent = nullptr);

  void set_vocabulary(const QStringList& vocabulary) { vocabulary_ = vocabulary; }
  void append(const std::vector<int>& ids, const std::vector<float>& probs);
  int chip_count() const { return count(); }
  int token_id(int chip) const;

 private:
  QStringList vocabulary_;
};

}  // namespace llmwb::ui
