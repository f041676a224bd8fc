#include "token_chips_view.h"

#include <QEvent>
#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPen>
#include <QPaintEvent>
#include <QScrollBar>
#include <QToolTip>

#include <algorithm>
#include <cmath>

#include "token_text.h"

namespace llmwb::ui {

namespace {
constexpr int kSpacing = 2;   // between chips and around the edge
constexpr int kPadX = 5;      // text to chip edge, horizontally
constexpr int kPadY = 2;      // and vertically

// Confident tokens green, unlikely ones orange: where the sampler took a chance.
QColor probability_color(float p) {
  return QColor::fromHsvF(float(0.08 + 0.25 * std::clamp(double(p), 0.0, 1.0)), 0.45f, 0.95f);
}
}  // namespace

TokenChipsView::TokenChipsView(QWidget* parent) : QAbstractScrollArea(parent) {
  // A scroll bar that came and went would change the view's size hints, and that re-lays out
  // (and repaints) the whole window mid-generation: keep it.
  setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOn);
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  viewport()->setMouseTracking(true);
  // Opaque, so that its repaint on every append does not repaint the group box beneath it.
  verticalScrollBar()->setAutoFillBackground(true);
  row_height_ = fontMetrics().height() + 2 * kPadY;
  clear();
}

void TokenChipsView::set_vocabulary(const QStringList& vocabulary) {
  vocabulary_ = vocabulary;
  pieces_.clear();
  reflow();
}

void TokenChipsView::clear() {
  chips_.clear();
  draft_chips_ = 0;
  selected_ = -1;
  next_x_ = next_y_ = kSpacing;
  update_scroll_range();
  verticalScrollBar()->setValue(0);
  viewport()->update();
}

const TokenChipsView::Piece& TokenChipsView::piece(int id) {
  auto it = pieces_.find(id);
  if (it == pieces_.end()) {
    Piece p;
    const QString text = display_token(vocabulary_, id);
    p.text = QStaticText(text);
    p.text.setTextFormat(Qt::PlainText);
    p.width = fontMetrics().horizontalAdvance(text);
    it = pieces_.insert(id, p);
  }
  return *it;
}

void TokenChipsView::place(Chip& chip) {
  chip.width = piece(chip.id).width + 2 * kPadX;
  // A chip wider than the view gets a row of its own rather than an endless loop of wraps.
  if (next_x_ > kSpacing && next_x_ + chip.width + kSpacing > flow_width_) {
    next_x_ = kSpacing;
    next_y_ += row_height_ + kSpacing;
  }
  chip.x = next_x_;
  chip.y = next_y_;
  next_x_ += chip.width + kSpacing;
}

void TokenChipsView::reflow() {
  ++reflows_;
  flow_width_ = viewport()->width();
  next_x_ = next_y_ = kSpacing;
  for (Chip& c : chips_) place(c);
  update_scroll_range();
  viewport()->update();
}

int TokenChipsView::content_height() const {
  return chips_.empty() ? 0 : next_y_ + row_height_ + kSpacing;
}

void TokenChipsView::update_scroll_range() {
  QScrollBar* bar = verticalScrollBar();
  bar->setRange(0, std::max(0, content_height() - viewport()->height()));
  bar->setPageStep(std::max(1, viewport()->height()));
  bar->setSingleStep(row_height_ + kSpacing);
}

void TokenChipsView::append(const std::vector<int>& ids, const std::vector<float>& probs,
                            const std::vector<uint8_t>& from_draft) {
  if (ids.empty()) return;
  QScrollBar* bar = verticalScrollBar();
  const bool follow = bar->value() == bar->maximum();
  const size_t first = chips_.size();
  chips_.reserve(chips_.size() + ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    Chip c;
    c.id = ids[i];
    c.prob = i < probs.size() ? probs[i] : NAN;
    if (!std::isnan(c.prob)) c.tint = probability_color(c.prob).rgb();
    c.from_draft = i < from_draft.size() && from_draft[i];
    draft_chips_ += c.from_draft;
    place(c);
    chips_.push_back(c);
  }
  update_scroll_range();
  // Follow the newest tokens unless the user scrolled back to read (scrolling moves the
  // pixels already drawn, see scrollContentsBy).
  if (follow) bar->setValue(bar->maximum());
  // Only the rows of the new chips need painting.
  const int top = chips_[first].y - bar->value();
  viewport()->update(QRect(0, top, viewport()->width(), content_height() - chips_[first].y));
}

int TokenChipsView::token_id(int chip) const {
  return chip >= 0 && chip < chip_count() ? chips_[size_t(chip)].id : -1;
}

float TokenChipsView::token_prob(int chip) const {
  return chip >= 0 && chip < chip_count() ? chips_[size_t(chip)].prob : NAN;
}

bool TokenChipsView::from_draft(int chip) const {
  return chip >= 0 && chip < chip_count() && chips_[size_t(chip)].from_draft;
}

QString TokenChipsView::tool_tip(int chip) const {
  if (chip < 0 || chip >= chip_count()) return {};
  const int id = chips_[size_t(chip)].id;
  const float p = chips_[size_t(chip)].prob;
  const QString raw = id >= 0 && id < vocabulary_.size() ? vocabulary_[id] : QString();
  QString tip = std::isnan(p) ? tr("token %1  %2").arg(id).arg(raw.toHtmlEscaped())
                              : tr("token %1  \"%2\"\np = %3").arg(id).arg(raw).arg(double(p), 0, 'f', 4);
  if (chips_[size_t(chip)].from_draft) tip += tr("\naccepted draft token (speculative decoding)");
  return tip;
}

QRect TokenChipsView::chip_rect(int chip) const {
  if (chip < 0 || chip >= chip_count()) return {};
  const Chip& c = chips_[size_t(chip)];
  return QRect(c.x, c.y - verticalScrollBar()->value(), c.width, row_height_);
}

int TokenChipsView::chip_at(const QPoint& pos) const {
  const int y = pos.y() + verticalScrollBar()->value();
  // Chips are in reading order: rows by y, then x within a row.
  auto it = std::partition_point(chips_.begin(), chips_.end(), [&](const Chip& c) {
    return c.y + row_height_ <= y || (c.y <= y && c.x + c.width <= pos.x());
  });
  if (it == chips_.end() || y < it->y || pos.x() < it->x) return -1;
  return int(it - chips_.begin());
}

bool TokenChipsView::viewportEvent(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const int chip = chip_at(help->pos());
    if (chip >= 0) QToolTip::showText(help->globalPos(), tool_tip(chip), viewport(), chip_rect(chip));
    else QToolTip::hideText();
    return true;
  }
  if (event->type() == QEvent::MouseButtonPress) {
    const int chip = chip_at(static_cast<QMouseEvent*>(event)->pos());
    if (chip >= 0) {
      set_selected(chip);
      emit chip_clicked(chip);
      return true;
    }
  }
  return QAbstractScrollArea::viewportEvent(event);
}

void TokenChipsView::set_selected(int chip) {
  if (chip == selected_) return;
  const QRect old = chip_rect(selected_);
  selected_ = chip >= 0 && chip < chip_count() ? chip : -1;
  viewport()->update(old.adjusted(-2, -2, 2, 2));
  // Scrolled into view when it is outside.
  if (selected_ >= 0) {
    const QRect r = chip_rect(selected_);
    if (r.top() < 0 || r.bottom() > viewport()->height())
      verticalScrollBar()->setValue(chips_[size_t(selected_)].y - viewport()->height() / 2);
  }
  viewport()->update(chip_rect(selected_).adjusted(-2, -2, 2, 2));
}

void TokenChipsView::paintEvent(QPaintEvent* event) {
  QPainter p(viewport());
  const int offset = verticalScrollBar()->value();
  const QRect area = event->rect();
  const QColor ink = palette().color(QPalette::Text);
  QColor outline = ink;
  outline.setAlpha(60);
  // Only the rows that intersect the area to repaint.
  auto it = std::partition_point(chips_.begin(), chips_.end(),
                                 [&](const Chip& c) { return c.y + row_height_ - offset < area.top(); });
  for (; it != chips_.end() && it->y - offset <= area.bottom(); ++it) {
    const QRect r(it->x, it->y - offset, it->width, row_height_);
    if (!r.intersects(area)) continue;
    if (std::isnan(it->prob)) {
      p.setPen(outline);
      p.drawRect(r.adjusted(0, 0, -1, -1));
      p.setPen(ink);
    } else {
      p.fillRect(r, QColor::fromRgb(it->tint));
      p.setPen(Qt::black);
    }
    p.drawStaticText(r.x() + kPadX, r.y() + kPadY, piece(it->id).text);
    if (it->from_draft) p.fillRect(QRect(r.left(), r.bottom() - kDraftBar + 1, r.width(), kDraftBar), QColor::fromRgb(kDraftColor));
  }
  // The chip open in the token inspector.
  const QRect sel = chip_rect(selected_);
  if (!sel.isEmpty() && sel.intersects(area)) {
    p.setPen(QPen(palette().color(QPalette::Highlight), 2));
    p.setBrush(Qt::NoBrush);
    p.drawRect(sel.adjusted(1, 1, -1, -1));
  }
}

void TokenChipsView::scrollContentsBy(int, int dy) {
  // Move the pixels already drawn; only the strip that scrolls into view is painted.
  viewport()->scroll(0, dy);
}

void TokenChipsView::resizeEvent(QResizeEvent* event) {
  QAbstractScrollArea::resizeEvent(event);
  if (viewport()->width() != flow_width_) reflow();
  else update_scroll_range();
}

void TokenChipsView::changeEvent(QEvent* event) {
  QAbstractScrollArea::changeEvent(event);
  if (event->type() == QEvent::FontChange) {
    pieces_.clear();
    row_height_ = fontMetrics().height() + 2 * kPadY;
    reflow();
  }
}

}  // namespace llmwb::ui
