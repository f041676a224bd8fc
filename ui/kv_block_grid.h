// kv_block_grid.h — every physical KV block as one cell: coloured by the sequence that owns
// it, hatched when it only sits in the prefix cache, empty when free; the filled share of a
// block is the filled share of its cell. Hover shows block id, owner, tokens and ref count.
#pragma once

#include <QPixmap>
#include <QWidget>

#include <cstdint>
#include <vector>

#include "llmwb/telemetry.h"

namespace llmwb::ui {

class KvBlockGrid : public QWidget {
  Q_OBJECT

 public:
  struct Counts {
    int used = 0, cached = 0, free = 0;
  };

  explicit KvBlockGrid(QWidget* parent = nullptr);

  // Takes the new states; the owner repaints (at its own pace). Returns whether anything changed.
  bool set_blocks(const std::vector<BlockState>& blocks, int block_size);
  // Requests held by Engine::pause: their blocks are drawn crossed out (they stay allocated).
  void set_paused_owners(const std::vector<int64_t>& owners);
  // Blocks outlined: the ones a step the token inspector shows read.
  void set_highlighted(const std::vector<int>& blocks);
  const std::vector<int>& highlighted() const { return highlighted_; }
  bool is_paused_owner(int64_t owner) const;
  // What the grid draws, counted from the cells themselves (tests compare it with the engine).
  Counts counts() const { return counts_; }
  int block_count() const { return int(blocks_.size()); }
  // The block under a point, -1 when none; the tooltip text for it.
  int block_at(QPoint pos) const;
  QString describe_block(int index) const;

  QSize sizeHint() const override { return {420, 220}; }

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;

 private:
  struct Geometry {
    int cell = 8, columns = 1;
  };
  Geometry geometry() const;
  // The grid of empty cells, drawn once per size / block count / palette.
  const QPixmap& background(const Geometry& g);

  std::vector<BlockState> blocks_;
  std::vector<int64_t> paused_owners_;
  std::vector<int> highlighted_;
  int block_size_ = 0;
  Counts counts_;
  QPixmap background_;
  qint64 background_key_ = 0;
};

}  // namespace llmwb::ui
