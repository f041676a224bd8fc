// attention_heatmap.h — attention weights of the last N generated tokens over the whole
// context, for a chosen layer and head or the mean over heads, token text on both axes.
// The engine captures weights only while this view is shown (capture_changed tells it).
#pragma once

#include <QStringList>
#include <QWidget>

#include <memory>

#include "frame_pacer.h"
#include "llmwb/telemetry.h"

class QComboBox;
class QCPColorMap;
class QCustomPlot;
class QLabel;
class QSpinBox;

namespace llmwb::ui {

class AttentionHeatmap : public QWidget {
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
  void showEvent(QShowEvent* event) override;
  void hideEvent(QHideEvent* event) override;
  void changeEvent(QEvent* event) override;

 private:
  void restyle();

 private:
  void redraw();
  void emit_capture();

  QSpinBox* layer_;
  QComboBox* head_;
  QSpinBox* queries_;
  QLabel* status_;
  QCustomPlot* plot_;
  QCPColorMap* map_;
  FramePacer pacer_;
  QStringList vocabulary_;
  std::shared_ptr<const AttentionSnapshot> snapshot_;
  bool shown_ = false;
};

}  // namespace llmwb::ui
