// sampling_params_editor.h — the sampling parameters as a form (temperature, top-p, top-k,
// min-p, repetition penalty, max tokens, seed), shared by the completion and chat views.
#pragma once

#include <QMap>
#include <QVariant>
#include <QWidget>

#include "llmwb/sampling_params.h"

class QCheckBox;
class QDoubleSpinBox;
class QSpinBox;
class QLineEdit;

namespace llmwb::ui {

class SamplingParamsEditor : public QWidget {
  Q_OBJECT

 public:
  explicit SamplingParamsEditor(QWidget* parent = nullptr);

  SamplingParams params() const;
  void set_params(const SamplingParams& p);
  // Persisted under `group` in QSettings; saving again what this editor last saved there
  // writes nothing (every Generate saves, and a QSettings write syncs the file under a
  // lock: milliseconds of GUI time per generation for nothing).
  void save(const QString& group) const;
  void restore(const QString& group);

 private:
  QDoubleSpinBox* temperature_;
  QDoubleSpinBox* top_p_;
  QSpinBox* top_k_;
  QDoubleSpinBox* min_p_;
  QDoubleSpinBox* repetition_penalty_;
  QSpinBox* max_tokens_;
  QCheckBox* fixed_seed_;
  QLineEdit* seed_;
  mutable QMap<QString, QVariantList> saved_;  // by group: the values last saved
};

}  // namespace llmwb::ui
