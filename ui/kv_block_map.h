// kv_block_map.h — the KV cache view: the block grid, its legend with the engine's counts,
// and blocks in use (and cached) over time.
#pragma once

#include <QWidget>

#include "frame_pacer.h"
#include "telemetry_frame.h"

class QCustomPlot;
class QLabel;

namespace llmwb::ui {

class KvBlockGrid;

class KvBlockMap : public QWidget {
  Q_OBJECT

 public:
  explicit KvBlockMap(QWidget* parent = nullptr);

  void add_frame(const TelemetryFrame& frame);
  void clear();

  KvBlockGrid* grid() const { return grid_; }
  // The engine's own counts from the newest snapshot shown.
  int engine_blocks_used() const { return engine_used_; }
  int engine_blocks_cached() const { return engine_cached_; }
  int engine_blocks_free() const { return engine_free_; }
  QString legend_text() const;

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void restyle();
  void showEvent(QShowEvent* event) override;

 private:
  KvBlockGrid* grid_;
  QLabel* legend_;
  QCustomPlot* plot_;
  FramePacer pacer_;
  int engine_used_ = 0, engine_cached_ = 0, engine_free_ = 0;
  double first_time_ = -1.0;
};

}  // namespace llmwb::ui
