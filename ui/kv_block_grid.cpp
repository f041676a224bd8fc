#include "kv_block_grid.h"

#include <QHelpEvent>
#include <QPainter>
#include <QPen>
#include <QToolTip>

#include <algorithm>
#include <cmath>

#include "chart_style.h"

namespace llmwb::ui {

KvBlockGrid::KvBlockGrid(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  // paintEvent covers every pixel (the background pixmap is the widget's size): Qt need not
  // paint the dock behind it first on each of the live view's draws.
  setAttribute(Qt::WA_OpaquePaintEvent);
  setMinimumSize(120, 80);
}

bool KvBlockGrid::set_blocks(const std::vector<BlockState>& blocks, int block_size) {
  auto same = [](const BlockState& a, const BlockState& b) {
    return a.owner == b.owner && a.ref_count == b.ref_count && a.filled == b.filled && a.cached == b.cached;
  };
  if (block_size == block_size_ && std::equal(blocks.begin(), blocks.end(), blocks_.begin(), blocks_.end(), same))
    return false;
  blocks_ = blocks;
  block_size_ = block_size;
  counts_ = {};
  for (const BlockState& b : blocks_) {
    // A block held by a sequence is in use even when it is also in the prefix cache.
    if (b.ref_count > 0 || b.owner >= 0) ++counts_.used;
    else if (b.cached) ++counts_.cached;
    else ++counts_.free;
  }
  return true;
}

KvBlockGrid::Geometry KvBlockGrid::geometry() const {
  Geometry g;
  const int n = std::max<int>(1, int(blocks_.size()));
  // The largest square cell (2..28 px) with which all blocks fit the widget.
  const double side = std::sqrt(double(width()) * height() / n);
  g.cell = std::clamp(int(side), 3, 28);
  while (g.cell > 3) {
    const int cols = std::max(1, width() / g.cell);
    const int rows = (n + cols - 1) / cols;
    if (rows * g.cell <= height()) break;
    --g.cell;
  }
  g.columns = std::max(1, width() / g.cell);
  return g;
}

int KvBlockGrid::block_at(QPoint pos) const {
  const Geometry g = geometry();
  if (pos.x() < 0 || pos.y() < 0) return -1;
  const int col = pos.x() / g.cell, row = pos.y() / g.cell;
  if (col >= g.columns) return -1;
  const int index = row * g.columns + col;
  return index < int(blocks_.size()) ? index : -1;
}

void KvBlockGrid::set_paused_owners(const std::vector<int64_t>& owners) {
  if (owners == paused_owners_) return;
  paused_owners_ = owners;
  update();
}

void KvBlockGrid::set_highlighted(const std::vector<int>& blocks) {
  if (blocks == highlighted_) return;
  highlighted_ = blocks;
  update();
}

bool KvBlockGrid::is_paused_owner(int64_t owner) const {
  return std::find(paused_owners_.begin(), paused_owners_.end(), owner) != paused_owners_.end();
}

QString KvBlockGrid::describe_block(int index) const {
  if (index < 0 || index >= int(blocks_.size())) return {};
  const BlockState& b = blocks_[size_t(index)];
  QString owner = b.owner >= 0 ? QString("request %1").arg(b.owner) : QString("none");
  if (b.owner >= 0 && is_paused_owner(b.owner)) owner += " (paused)";
  if (std::find(highlighted_.begin(), highlighted_.end(), index) != highlighted_.end())
    owner += "\nread by the step the token inspector shows";
  const QString state = (b.ref_count > 0 || b.owner >= 0) ? (b.cached ? "in use, cached" : "in use")
                        : b.cached                       ? "cached (reusable prefix)"
                                                         : "free";
  return QString("block %1 — %2\nowner: %3\ntokens filled: %4 / %5\nref count: %6")
      .arg(index)
      .arg(state, owner)
      .arg(b.filled)
      .arg(block_size_)
      .arg(b.ref_count);
}

const QPixmap& KvBlockGrid::background(const Geometry& g) {
  const QPalette pal = palette();
  const qint64 key = qHash(QString("%1 %2 %3 %4 %5").arg(width()).arg(height()).arg(blocks_.size()).arg(g.cell).arg(pal.cacheKey()));
  if (key == background_key_ && !background_.isNull()) return background_;
  background_key_ = key;
  background_ = QPixmap(size());
  background_.fill(pal.color(QPalette::Base));
  if (g.cell >= 6) {
    QPainter p(&background_);
    QColor outline = pal.color(QPalette::Text);
    outline.setAlpha(50);
    p.setPen(outline);
    for (int i = 0; i < int(blocks_.size()); ++i)
      p.drawRect((i % g.columns) * g.cell + 1, (i / g.columns) * g.cell + 1, g.cell - 3, g.cell - 3);
  }
  return background_;
}

void KvBlockGrid::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QPalette pal = palette();
  const Geometry g = geometry();
  // Free cells are the background; only blocks in use or cached are painted per frame.
  p.drawPixmap(0, 0, background(g));
  const int pad = g.cell >= 6 ? 1 : 0;
  QColor cached = pal.color(QPalette::Text);
  cached.setAlpha(90);
  for (int i = 0; i < int(blocks_.size()); ++i) {
    const BlockState& b = blocks_[size_t(i)];
    const bool used = b.ref_count > 0 || b.owner >= 0;
    if (!used && !b.cached) continue;
    const QRect r((i % g.columns) * g.cell + pad, (i / g.columns) * g.cell + pad, g.cell - 2 * pad - (pad ? 1 : 0),
                  g.cell - 2 * pad - (pad ? 1 : 0));
    if (used) {
      const QColor c = id_color(b.owner >= 0 ? b.owner : 0);
      QColor light = c;
      light.setAlpha(80);
      p.fillRect(r, light);
      // The filled part of the block, bottom up.
      const double share = block_size_ > 0 ? std::clamp(double(b.filled) / block_size_, 0.0, 1.0) : 1.0;
      const int h = int(std::round(r.height() * share));
      p.fillRect(QRect(r.left(), r.bottom() - h + 1, r.width(), h), c);
      if (b.owner >= 0 && is_paused_owner(b.owner)) p.fillRect(r, QBrush(pal.color(QPalette::Base), Qt::Dense5Pattern));
    } else {
      p.fillRect(r, QBrush(cached, Qt::BDiagPattern));
    }
  }
  // The blocks the inspected step read.
  p.setBrush(Qt::NoBrush);
  p.setPen(QPen(pal.color(QPalette::Highlight), 2));
  for (int i : highlighted_)
    if (i >= 0 && i < int(blocks_.size()))
      p.drawRect((i % g.columns) * g.cell, (i / g.columns) * g.cell, g.cell - 1, g.cell - 1);
  if (blocks_.empty()) {
    p.setPen(pal.color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter, tr("No model loaded: the KV block pool appears here."));
  }
}

bool KvBlockGrid::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const int index = block_at(help->pos());
    if (index >= 0) QToolTip::showText(help->globalPos(), describe_block(index), this);
    else QToolTip::hideText();
    return true;
  }
  return QWidget::event(event);
}

}  // namespace llmwb::ui
