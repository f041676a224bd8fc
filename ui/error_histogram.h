// error_histogram.h — the distribution of one tensor's quantization error q − x: the bins of
// TensorError::histogram as bars over [−max|err|, +max|err|].
#pragma once

#include <QWidget>

#include "llmwb/quant_report.h"

class QCustomPlot;

namespace llmwb::ui {

class ErrorHistogram : public QWidget {
  Q_OBJECT

 public:
  explicit ErrorHistogram(QWidget* parent = nullptr);

  void set_tensor(const TensorError& t);
  void clear();
  QString tensor_name() const { return name_; }
  QCustomPlot* plot() const { return plot_; }
  // The counts drawn, bin by bin.
  std::vector<double> counts() const;

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void rebuild();

  QCustomPlot* plot_;
  QString name_;
  TensorError tensor_;
};

}  // namespace llmwb::ui
