// kv_block_map.h — the KV cache view: the block grid, its legend with the engine's counts,
// and blocks in use (and cached) over time.
#pragma once

#include <memory>

#include "live_view.h"
#include "telemetry_frame.h"

namespace llmwb::ui {

class KvBlockGrid;
class LivePlot;
class LiveText;

class KvBlockMap : public LiveView {
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
  // The blocks-over-time chart (its graphs on the live layer, redrawn alone while the axes
  // stay: see ThroughputChart).
  LivePlot* plot() const { return plot_; }

 protected:
  void draw() override;
  void restyle() override;

 private:
  // The grid and legend from the newest snapshot (deferred while the view is off screen).
  void show_snapshot();
  // Sets the axis ranges for the data now held; true if any of them changed.
  bool update_ranges();

  KvBlockGrid* grid_;
  LiveText* legend_;  // updated every frame: must not re-lay out the window
  LivePlot* plot_;
  bool replot_all_ = true;  // the next draw replots every layer
  std::shared_ptr<const StepTelemetry> latest_;
  bool latest_shown_ = true;
  int engine_used_ = 0, engine_cached_ = 0, engine_free_ = 0;
  double first_time_ = -1.0;
  // The newest step's time: the axis follows it, not the snapshot's, which the engine takes
  // only once per delivery and so can lag the newest step by a delivery's worth of steps.
  double last_time_ = -1.0;
};

}  // namespace llmwb::ui
