// experiments_view.h — run the same prompts and seed under two or more engine
// configurations; outputs side by side with the first diverging token highlighted, and a
// table of tokens/s, time to first token, memory and the other metrics; experiments saved and
// loaded as JSON, the table exported as CSV.
#pragma once

#include <QStringList>
#include <QWidget>

#include <vector>

#include "experiment.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QTableWidget;
class QTextBrowser;

namespace llmwb::ui {

class ExperimentsView : public QWidget {
  Q_OBJECT

 public:
  explicit ExperimentsView(QWidget* parent = nullptr);

  Experiment experiment() const;
  void set_experiment(const Experiment& e);
  void set_model_ready(bool ready);
  void set_vocabulary(const QStringList& vocabulary) { vocabulary_ = vocabulary; }
  // Presets from a JSON array of experiments (the bundled :/presets/experiments.json).
  void load_presets(const QString& path);

  QTableWidget* configs_table() const { return configs_; }
  QTableWidget* results_table() const { return results_; }
  QTextBrowser* outputs_browser() const { return outputs_; }
  const std::vector<Experiment>& presets() const { return preset_list_; }
  int result_rows() const;
  bool is_running() const { return running_; }
  const std::vector<ExperimentResult>& results() const { return results_data_; }
  QString outputs_html() const;
  // The first token index where `a` and `b` differ; -1 when one is a prefix of the other
  // and they have the same length.
  static int first_divergence(const std::vector<int>& a, const std::vector<int>& b);

  // File operations report failures through error() and return false.
  bool save(const QString& path);
  bool load(const QString& path);
  bool export_csv(const QString& path);

 public slots:
  void run();
  void cancel();
  void on_progress(int config_index, const QString& what);
  void on_result(const llmwb::ui::ExperimentResult& result);
  void on_finished(const QString& error);

 signals:
  void run_requested(const llmwb::ui::Experiment& experiment);
  void cancel_requested();
  void error(const QString& message);
  void finished();

 private:
  void add_config_row(const ExperimentConfig& c);
  void render_outputs();
  void update_buttons();
  // Tables and the outputs pane as tall as their rows (up to a cap), so no row is cut in half.
  void fit_heights();
  void fit_outputs(const QSizeF& document_size);

  QComboBox* presets_;
  std::vector<Experiment> preset_list_;
  QLineEdit* name_;
  QTableWidget* configs_;
  QPlainTextEdit* prompts_;
  QSpinBox* max_tokens_;
  QDoubleSpinBox* temperature_;
  QLineEdit* seed_;
  QCheckBox* accuracy_;
  QPushButton* run_;
  QPushButton* cancel_;
  QLabel* status_;
  QTableWidget* results_;
  QTextBrowser* outputs_;
  QStringList vocabulary_;
  std::vector<ExperimentResult> results_data_;
  Experiment running_experiment_;
  bool ready_ = false;
  bool running_ = false;
};

}  // namespace llmwb::ui
