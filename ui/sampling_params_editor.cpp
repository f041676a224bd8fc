#include "sampling_params_editor.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QRegularExpressionValidator>
#include <QSettings>
#include <QSpinBox>

namespace llmwb::ui {

SamplingParamsEditor::SamplingParamsEditor(QWidget* parent)
    : QWidget(parent),
      temperature_(new QDoubleSpinBox(this)),
      top_p_(new QDoubleSpinBox(this)),
      top_k_(new QSpinBox(this)),
      min_p_(new QDoubleSpinBox(this)),
      repetition_penalty_(new QDoubleSpinBox(this)),
      max_tokens_(new QSpinBox(this)),
      fixed_seed_(new QCheckBox(tr("fixed"), this)),
      seed_(new QLineEdit(this)) {
  temperature_->setObjectName("temperature");
  temperature_->setRange(0.0, 5.0);
  temperature_->setSingleStep(0.05);
  temperature_->setToolTip(tr("0 = greedy (always the most likely token)"));
  top_p_->setObjectName("top_p");
  top_p_->setRange(0.01, 1.0);
  top_p_->setSingleStep(0.01);
  top_k_->setObjectName("top_k");
  top_k_->setRange(0, 100000);
  top_k_->setSpecialValueText(tr("off"));
  min_p_->setObjectName("min_p");
  min_p_->setRange(0.0, 1.0);
  min_p_->setSingleStep(0.01);
  repetition_penalty_->setObjectName("repetition_penalty");
  repetition_penalty_->setRange(0.5, 3.0);
  repetition_penalty_->setSingleStep(0.05);
  max_tokens_->setObjectName("max_tokens");
  max_tokens_->setRange(1, 1 << 20);
  seed_->setObjectName("seed");
  seed_->setValidator(new QRegularExpressionValidator(QRegularExpression("[0-9]{1,19}"), seed_));
  fixed_seed_->setObjectName("fixed_seed");
  fixed_seed_->setToolTip(tr("With a fixed seed the same prompt gives the same output."));

  auto* form = new QFormLayout(this);
  form->setContentsMargins(0, 0, 0, 0);
  form->addRow(tr("Temperature"), temperature_);
  form->addRow(tr("Top-p"), top_p_);
  form->addRow(tr("Top-k"), top_k_);
  form->addRow(tr("Min-p"), min_p_);
  form->addRow(tr("Repetition penalty"), repetition_penalty_);
  form->addRow(tr("Max tokens"), max_tokens_);
  auto* seed_row = new QHBoxLayout;
  seed_row->addWidget(fixed_seed_);
  seed_row->addWidget(seed_, 1);
  form->addRow(tr("Seed"), seed_row);
  connect(fixed_seed_, &QCheckBox::toggled, seed_, &QWidget::setEnabled);

  SamplingParams defaults;
  defaults.temperature = 0.8f;
  defaults.top_p = 0.95f;
  defaults.seed = 42;
  set_params(defaults);
}

SamplingParams SamplingParamsEditor::params() const {
  SamplingParams p;
  p.temperature = float(temperature_->value());
  p.top_p = float(top_p_->value());
  p.top_k = top_k_->value();
  p.min_p = float(min_p_->value());
  p.repetition_penalty = float(repetition_penalty_->value());
  p.max_tokens = max_tokens_->value();
  if (fixed_seed_->isChecked()) p.seed = seed_->text().toULongLong();
  return p;
}

void SamplingParamsEditor::set_params(const SamplingParams& p) {
  temperature_->setValue(p.temperature);
  top_p_->setValue(p.top_p);
  top_k_->setValue(std::max(0, p.top_k));
  min_p_->setValue(p.min_p);
  repetition_penalty_->setValue(p.repetition_penalty);
  max_tokens_->setValue(p.max_tokens);
  fixed_seed_->setChecked(p.seed.has_value());
  seed_->setEnabled(p.seed.has_value());
  seed_->setText(QString::number(p.seed.value_or(42)));
}

namespace {
const char* const kSavedKeys[] = {"temperature", "top_p", "top_k", "min_p", "repetition_penalty",
                                  "max_tokens", "fixed_seed", "seed"};
}  // namespace

void SamplingParamsEditor::save(const QString& group) const {
  const SamplingParams p = params();
  const QVariantList values = {p.temperature, p.top_p, p.top_k, p.min_p, p.repetition_penalty,
                               p.max_tokens, fixed_seed_->isChecked(), seed_->text()};
  auto last = saved_.constFind(group);
  if (last != saved_.constEnd() && *last == values) return;
  QSettings s;
  s.beginGroup(group);
  for (int i = 0; i < values.size(); ++i) s.setValue(kSavedKeys[i], values[i]);
  s.endGroup();
  saved_[group] = values;
}

void SamplingParamsEditor::restore(const QString& group) {
  QSettings s;
  s.beginGroup(group);
  if (!s.contains("temperature")) return;
  SamplingParams p = params();
  p.temperature = s.value("temperature", p.temperature).toFloat();
  p.top_p = s.value("top_p", p.top_p).toFloat();
  p.top_k = s.value("top_k", p.top_k).toInt();
  p.min_p = s.value("min_p", p.min_p).toFloat();
  p.repetition_penalty = s.value("repetition_penalty", p.repetition_penalty).toFloat();
  p.max_tokens = s.value("max_tokens", p.max_tokens).toInt();
  if (s.value("fixed_seed", true).toBool()) p.seed = s.value("seed", "42").toString().toULongLong();
  else p.seed.reset();
  set_params(p);
}

}  // namespace llmwb::ui
