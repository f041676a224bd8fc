// settings_dialog.h — engine configuration, tensor / pipeline parallelism, slow motion and theme.
#pragma once

#include <QDialog>

#include <optional>

#include "app_settings.h"
#include "llmwb/model_info.h"

class QCheckBox;
class QComboBox;
class QDialogButtonBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QSpinBox;

namespace llmwb::ui {

// Appends every backend the engine knows (llmwb::list_backends(): label shown, name as item
// data); one this build or machine cannot run stays listed, disabled, with the reason as its
// tooltip (e.g. "no CUDA device is present"). The Settings dialog and the Experiments table.
void add_backend_items(QComboBox* box);
// Whether item i of such a box can be chosen.
bool backend_item_enabled(const QComboBox* box, int i);

class SettingsDialog : public QDialog {
  Q_OBJECT

 public:
  explicit SettingsDialog(const AppSettings& settings, QWidget* parent = nullptr);
  AppSettings settings() const;
  QComboBox* backend_box() const { return backend_; }
  QComboBox* speculative_box() const { return speculative_; }
  QSpinBox* tensor_parallel_box() const { return tensor_parallel_; }
  QSpinBox* pipeline_parallel_box() const { return pipeline_parallel_; }
  QComboBox* dist_box() const { return dist_; }
  QLabel* parallel_error_label() const { return parallel_error_; }
  QPushButton* ok_button() const;

  // The loaded model, against which the parallel layout is checked (TP must divide its KV
  // heads, PP at most its layers); without one only what needs no model is checked.
  void set_model(const ModelInfo& model);
  // Why the parallel layout cannot run (backend, model, speculation), empty when it can; shown
  // under the spin boxes, and OK is disabled while it is not empty.
  QString parallel_error() const;
  // OK: refuses (with a message) a speculation method the engine would not accept.
  void accept() override;

 private:
  AppSettings base_;
  QComboBox* backend_;
  QSpinBox* threads_;
  QSpinBox* block_size_;
  QSpinBox* max_num_seqs_;
  QSpinBox* max_batched_;
  QSpinBox* max_model_len_;
  QSpinBox* kv_memory_;
  QComboBox* kv_dtype_;
  QCheckBox* prefix_cache_;
  QComboBox* speculative_;   // editable: draft:PATH is typed
  QSpinBox* spec_k_;
  QDoubleSpinBox* spec_p_min_;   // its minimum (-0.05) reads "automatic"
  QSpinBox* tensor_parallel_;
  QSpinBox* pipeline_parallel_;
  QComboBox* dist_;
  QLabel* parallel_ranks_;
  QLabel* parallel_error_;
  QDialogButtonBox* buttons_;
  std::optional<ModelInfo> model_;
  void update_parallel_check();
  QSpinBox* step_delay_;
  QComboBox* theme_;
};

}  // namespace llmwb::ui
