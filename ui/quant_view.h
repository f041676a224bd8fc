// quant_view.h — what a weight quantization scheme costs the loaded model: pick a scheme and
// an evaluation text, Run (the report is made in the engine's worker thread, with progress
// and Cancel), then read the per-layer error bars, the worst tensors (sortable: MSE, SNR,
// max error), the chosen tensor's error histogram and the end-to-end figures (perplexity
// stored vs quantized, KL divergence, top-1 and greedy agreement, weight size). The report
// exports as the same JSON as `llmwb-cli quant-report --json`.
#pragma once

#include <QWidget>

#include <map>
#include <optional>

#include "llmwb/quant_report.h"

class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QTableWidget;

namespace llmwb::ui {

class ErrorHistogram;
class LayerErrorChart;
class MessageBanner;

class QuantView : public QWidget {
  Q_OBJECT

 public:
  enum Column { kTensor, kTypes, kMse, kSnr, kMaxErr, kSize, kColumns };

  explicit QuantView(QWidget* parent = nullptr);

  void set_model_ready(bool ready);
  void set_scheme(const QString& scheme);
  QString scheme() const;
  // The evaluation text: a file's contents (false and a banner when it cannot be read), or
  // the built-in sample again with an empty path.
  bool set_text_file(const QString& path);
  // What the next Run asks the worker for (model, tokenizer and threads are the worker's).
  QuantReportOptions options() const;

  bool is_running() const { return running_; }
  const std::optional<QuantReport>& report() const { return report_; }
  // One of "weights", "perplexity", "kl", "top1", "greedy": the figure's text as shown.
  QString figure(const QString& key) const;
  // Writes the report as quant-report --json does; false (and a banner) on failure.
  bool export_json(const QString& path);

  QComboBox* scheme_box() const { return scheme_; }
  QPushButton* run_button() const { return run_; }
  QPushButton* cancel_button() const { return cancel_; }
  QTableWidget* tensor_table() const { return table_; }
  LayerErrorChart* layer_chart() const { return layers_; }
  ErrorHistogram* histogram() const { return histogram_; }
  MessageBanner* banner() const { return banner_; }
  QProgressBar* progress_bar() const { return progress_; }

 public slots:
  void run();
  void cancel();
  void on_progress(double fraction, const QString& what);
  void on_report(const llmwb::QuantReport& report);
  void on_failed(const QString& error, bool cancelled);

 signals:
  void run_requested(const llmwb::QuantReportOptions& options);
  void cancel_requested();
  void finished();

 private:
  void clear_results();
  void fill_table();
  void show_figures();
  void show_selected_histogram();
  void update_buttons();

  MessageBanner* banner_;
  QComboBox* scheme_;
  QLabel* text_source_;
  QPushButton* run_;
  QPushButton* cancel_;
  QPushButton* export_;
  QProgressBar* progress_;
  QLabel* status_;
  std::map<QString, QLabel*> figures_;
  LayerErrorChart* layers_;
  QTableWidget* table_;
  ErrorHistogram* histogram_;
  std::string text_;
  QString text_name_;
  std::optional<QuantReport> report_;
  bool ready_ = false;
  bool running_ = false;
};

}  // namespace llmwb::ui
