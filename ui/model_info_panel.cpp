#include "model_info_panel.h"

#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QStringList>

namespace llmwb::ui {

namespace {
const char* const kRows[] = {"Model",         "Format",    "Architecture", "Parameters",
                             "Weights",       "Dtype",     "Context",      "Shape",
                             "Attention",     "RoPE",      "Tokenizer",    "Chat format",
                             "Backend",       "Tuning",    "Path"};
}  // namespace

QString human_count(double n) {
  const char* units[] = {"", " K", " M", " B", " T"};
  int u = 0;
  while (n >= 1000.0 && u < 4) {
    n /= 1000.0;
    ++u;
  }
  return QString::number(n, 'f', u == 0 ? 0 : (n < 10 ? 2 : 1)) + units[u];
}

QString human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  return QString::number(bytes, 'f', u == 0 ? 0 : 1) + " " + units[u];
}

ModelInfoPanel::ModelInfoPanel(QWidget* parent) : QWidget(parent), form_(new QFormLayout(this)) {
  form_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  for (const char* row : kRows) {
    auto* label = new QLabel(this);
    label->setObjectName(row);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    label->setWordWrap(true);
    form_->addRow(tr(row), label);
  }
  clear();
}

void ModelInfoPanel::set_row(const QString& row, const QString& value) {
  if (auto* label = findChild<QLabel*>(row)) label->setText(value);
}

QString ModelInfoPanel::value(const QString& row) const {
  auto* label = findChild<QLabel*>(row);
  return label ? label->text() : QString();
}

void ModelInfoPanel::clear() {
  for (const char* row : kRows) set_row(row, "–");
  set_row("Model", tr("No model loaded. File ▸ Open Model…"));
}

void ModelInfoPanel::set_info(const ModelInfo& m, const QString& chat_format) {
  set_row("Model", QString::fromStdString(m.name.empty() ? QFileInfo(QString::fromStdString(m.path)).fileName().toStdString() : m.name));
  set_row("Format", QString::fromStdString(m.format));
  set_row("Architecture", QString::fromStdString(m.architecture));
  set_row("Parameters", human_count(double(m.n_params)));
  set_row("Weights", human_bytes(double(m.weight_bytes)));
  set_row("Dtype", QString::fromStdString(m.dtype_summary));
  set_row("Context", tr("%1 tokens").arg(m.context_length));
  set_row("Shape", tr("dim %1, hidden %2, %3 layers, vocab %4").arg(m.dim).arg(m.hidden_dim).arg(m.n_layers).arg(m.vocab_size));
  QString attention = tr("%1 query heads, %2 KV heads, head dim %3").arg(m.n_heads).arg(m.n_kv_heads).arg(m.head_dim);
  if (m.qkv_bias) attention += tr(", Q/K/V bias");
  if (m.qk_norm) attention += tr(", per-head Q/K norm");
  set_row("Attention", attention);
  set_row("RoPE", tr("θ = %1, %2%3")
                      .arg(double(m.rope_theta))
                      .arg(QString::fromStdString(m.rope_layout))
                      .arg(m.rope_scaling.empty() || m.rope_scaling == "none" ? QString() : ", " + QString::fromStdString(m.rope_scaling)));
  set_row("Tokenizer", tr("%1, %2 pieces").arg(QString::fromStdString(m.tokenizer_kind)).arg(m.tokenizer_vocab));
  set_row("Chat format", chat_format);
  set_row("Backend", m.backend.empty() ? QString("–") : QString::fromStdString(m.backend));
  QStringList tuning;
  for (const auto& [k, v] : m.tuning) tuning << QString::fromStdString(k + " " + v);
  set_row("Tuning", tuning.isEmpty() ? QString("–") : tuning.join(", "));
  set_row("Path", QString::fromStdString(m.path));
}

}  // namespace llmwb::ui
