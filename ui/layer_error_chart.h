// layer_error_chart.h — bars of the relative error quantization leaves in each layer's output
// on the calibration prompt: either the residual stream after each layer (one bar per layer)
// or every matmul's output grouped by layer, one colour per matrix kind (q, k, v, o, gate,
// up, down).
#pragma once

#include <QWidget>

#include <vector>

#include "llmwb/quant_report.h"

class QComboBox;
class QCustomPlot;

namespace llmwb::ui {

class LayerErrorChart : public QWidget {
  Q_OBJECT

 public:
  enum class Mode { Residual, Matmuls };

  explicit LayerErrorChart(QWidget* parent = nullptr);

  // `outputs` as QuantReport::outputs: "layer N" entries, then weight names ("blk.N.attn_q.weight").
  void set_errors(const std::vector<OutputError>& outputs, int n_layers);
  void clear();
  void set_mode(Mode mode);
  Mode mode() const { return mode_; }

  QCustomPlot* plot() const { return plot_; }
  // The bars drawn: one series in Residual mode, one per matrix kind in Matmuls mode; each
  // series holds one value per layer (NaN where the layer has none).
  int series_count() const;
  std::vector<double> series_values(int series) const;

  // "attn_q" for "blk.3.attn_q.weight" (and the layer, 3); empty for other names.
  static QString matmul_kind(const QString& weight_name, int* layer = nullptr);

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void rebuild();

  Mode mode_ = Mode::Residual;
  QComboBox* mode_box_;
  QCustomPlot* plot_;
  std::vector<OutputError> outputs_;
  int n_layers_ = 0;
};

}  // namespace llmwb::ui
