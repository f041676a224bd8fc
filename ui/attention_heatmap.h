// attention_heatmap.h — attention weights of the last N generated tokens over the whole
// context, for a chosen layer and head or the mean over heads, token text on both axes.
// The engine captures weights only while this view is on screen (capture_changed tells it):
// capturing costs the engine a copy every step.
#pragma once

#include <QStringList>

#include <memory>

#include "live_view.h"
#include "llmwb/telemetry.h"

class QComboBox;
class QCPColorMap;
class QCustomPlot;
class QSpinBox;

namespace llmwb::ui {

class LiveText;

class AttentionHeatmap : public LiveView {
  Q_OBJECT

 public:
  explicit AttentionHeatmap(QWidget* parent = nullptr);

  void set_model(int n_layers, int n_heads, const QStringList& vocabulary);
  void set_snapshot(std::shared_ptr<const AttentionSnapshot> snapshot);
  bool has_data() const { return snapshot_ != nullptr; }
  int layer() const;
  int max_queries() const;
  // -1: mean over heads.
  int head() const;

 signals:
  void capture_changed(bool on, int layer, int max_queries);

 protected:
  void draw() override;
  void restyle() override;
  void on_screen_changed(bool on) override;

 private:
  void emit_capture();

  QSpinBox* layer_;
  QComboBox* head_;
  QSpinBox* queries_;
  LiveText* status_;  // changes with every snapshot: must not re-lay out the window
  QCustomPlot* plot_;
  QCPColorMap* map_;
  QStringList vocabulary_;
  std::shared_ptr<const AttentionSnapshot> snapshot_;
  bool shown_ = false;
};

}  // namespace llmwb::ui
