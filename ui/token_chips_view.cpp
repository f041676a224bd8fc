#include "token_chips_view.h"

#include <cmath>

#include "token_text.h"

namespace llmwb::ui {

TokenChipsView::TokenChipsView(QWidget* parent) : QListWidget(parent) {
  setViewMode(QListView::IconMode);
  setFlow(QListView::LeftToRight);
  setWrapping(true);
  setResizeMode(QListView::Adjust);
  setMovement(QListView::Static);
  setSpacing(2);
  setUniformItemSizes(false);
  setSelectionMode(QAbstractItemView::ExtendedSelection);
  setWordWrap(false);
}

void TokenChipsView::append(const std::vector<int>& ids, const std::vector<float>& probs) {
  setUpdatesEnabled(false);
  for (size_t i = 0; i < ids.size(); ++i) {
    const int id = ids[i];
    const float p = i < probs.size() ? probs[i] : NAN;
    auto* item = new QListWidgetItem(display_token(vocabulary_, id));
    item->setData(Qt::UserRole, id);
    const QString raw = id >= 0 && id < vocabulary_.size() ? vocabulary_[id] : QString();
    item->setToolTip(std::isnan(p) ? tr("token %1  %2").arg(id).arg(raw.toHtmlEscaped())
                                   : tr("token %1  \"%2\"\np = %3").arg(id).arg(raw).arg(double(p), 0, 'f', 4));
    // Confident tokens green, unlikely ones orange: where the sampler took a chance.
    if (!std::isnan(p)) {
      QColor c = QColor::fromHsvF(float(0.08 + 0.25 * std::clamp(double(p), 0.0, 1.0)), 0.45f, 0.95f);
      item->setBackground(c);
      item->setForeground(Qt::black);
    }
    item->setTextAlignment(Qt::AlignCenter);
    addItem(item);
  }
  setUpdatesEnabled(true);
  scrollToBottom();
}

int TokenChipsView::token_id(int chip) const {
  const QListWidgetItem* it = item(chip);
  return it ? it->data(Qt::UserRole).toInt() : -1;
}

}  // namespace llmwb::ui
