#include "experiments_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileDialog>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollBar>
#include <QAbstractTextDocumentLayout>
#include <QTextDocument>
#include <QSaveFile>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QTextBrowser>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "llmwb/engine_config.h"
#include "llmwb/quant_report.h"
#include "settings_dialog.h"
#include "token_text.h"

namespace llmwb::ui {

namespace {
enum Column {
  kName, kBackend, kThreads, kBlockSize, kMaxSeqs, kMaxBatched, kPrefixCache, kKvDtype, kQuantize,
  kSpeculative, kSpecK, kSpecPMin, kTensorParallel, kPipelineParallel, kColumns
};
const char* const kHeaders[] = {"name", "backend", "threads", "block size", "max seqs", "max batched tokens",
                                "prefix cache", "KV dtype", "quantize", "speculation", "guesses/step",
                                "draft stops below p", "tensor parallel", "pipeline parallel"};
}  // namespace

ExperimentsView::ExperimentsView(QWidget* parent)
    : QWidget(parent),
      presets_(new QComboBox(this)),
      name_(new QLineEdit(this)),
      configs_(new QTableWidget(0, kColumns, this)),
      prompts_(new QPlainTextEdit(this)),
      max_tokens_(new QSpinBox(this)),
      temperature_(new QDoubleSpinBox(this)),
      seed_(new QLineEdit(this)),
      accuracy_(new QCheckBox(tr("Accuracy vs stored weights"), this)),
      run_(new QPushButton(tr("Run"), this)),
      cancel_(new QPushButton(tr("Cancel"), this)),
      status_(new QLabel(this)),
      results_(new QTableWidget(this)),
      outputs_(new QTextBrowser(this)) {
  configs_->setObjectName("experiment_configs");
  results_->setObjectName("experiment_results");
  outputs_->setObjectName("experiment_outputs");
  run_->setObjectName("run_experiment");
  for (int c = 0; c < kColumns; ++c) configs_->setHorizontalHeaderItem(c, new QTableWidgetItem(tr(kHeaders[c])));
  configs_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  configs_->horizontalHeader()->setStretchLastSection(true);
  configs_->verticalHeader()->setVisible(false);
  prompts_->setPlaceholderText(tr("One prompt per line (an empty line: BOS alone)"));
  prompts_->setMaximumHeight(64);
  max_tokens_->setRange(1, 1 << 16);
  temperature_->setRange(0.0, 5.0);
  temperature_->setSingleStep(0.1);
  results_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  results_->verticalHeader()->setVisible(false);
  results_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);

  auto* add = new QPushButton(tr("Add configuration"), this);
  auto* remove = new QPushButton(tr("Remove"), this);
  auto* load = new QPushButton(tr("Load…"), this);
  auto* save = new QPushButton(tr("Save…"), this);
  auto* csv = new QPushButton(tr("Export CSV…"), this);

  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("Preset"), this));
  bar->addWidget(presets_);
  bar->addWidget(new QLabel(tr("Name"), this));
  bar->addWidget(name_, 1);
  bar->addWidget(load);
  bar->addWidget(save);
  bar->addWidget(csv);

  auto* config_buttons = new QHBoxLayout;
  config_buttons->addWidget(add);
  config_buttons->addWidget(remove);
  config_buttons->addStretch(1);
  config_buttons->addWidget(accuracy_);

  // Two rows beside the prompts (not a four-row form): the setup pane stays short, and the
  // metrics and outputs below get the height.
  auto* params = new QGridLayout;
  params->addWidget(new QLabel(tr("Max tokens"), this), 0, 0);
  params->addWidget(max_tokens_, 0, 1);
  params->addWidget(new QLabel(tr("Temperature"), this), 0, 2);
  params->addWidget(temperature_, 0, 3);
  params->addWidget(new QLabel(tr("Seed"), this), 1, 0);
  params->addWidget(seed_, 1, 1);
  accuracy_->setObjectName("experiment_accuracy");
  accuracy_->setToolTip(tr("Also measure each configuration's perplexity, KL divergence and greedy agreement against "
                           "the stored weights (on a built-in text): what its quantization scheme costs"));
  params->addWidget(run_, 1, 2);
  params->addWidget(cancel_, 1, 3);

  auto* setup = new QGroupBox(tr("Configurations and prompts"), this);
  auto* setup_layout = new QVBoxLayout(setup);
  setup_layout->addWidget(configs_);
  setup_layout->addLayout(config_buttons);
  auto* prompt_row = new QHBoxLayout;
  prompt_row->addWidget(prompts_, 1);
  prompt_row->addLayout(params);
  setup_layout->addLayout(prompt_row);

  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(setup);
  auto* results_box = new QGroupBox(tr("Metrics"), this);
  (new QVBoxLayout(results_box))->addWidget(results_);
  split->addWidget(results_box);
  auto* outputs_box = new QGroupBox(tr("Outputs side by side (first token that differs from the first configuration in red)"), this);
  (new QVBoxLayout(outputs_box))->addWidget(outputs_);
  split->addWidget(outputs_box);
  split->setStretchFactor(0, 0);
  split->setStretchFactor(1, 1);
  split->setStretchFactor(2, 2);
  split->setSizes({210, 120, 330});

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addWidget(split, 1);
  layout->addWidget(status_);

  connect(add, &QPushButton::clicked, this, [this] {
    ExperimentConfig c;
    c.name = tr("config %1").arg(configs_->rowCount() + 1);
    add_config_row(c);
  });
  connect(remove, &QPushButton::clicked, this, [this] {
    if (configs_->currentRow() >= 0) configs_->removeRow(configs_->currentRow());
  });
  // Re-wrapping (new outputs, a narrower pane) changes the document's height: follow it.
  connect(outputs_->document()->documentLayout(), &QAbstractTextDocumentLayout::documentSizeChanged, this,
          &ExperimentsView::fit_outputs);
  connect(run_, &QPushButton::clicked, this, &ExperimentsView::run);
  connect(cancel_, &QPushButton::clicked, this, &ExperimentsView::cancel);
  connect(load, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Load experiment"), {}, tr("Experiments (*.json)"));
    if (!path.isEmpty()) this->load(path);
  });
  connect(save, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Save experiment"), name_->text() + ".json", tr("Experiments (*.json)"));
    if (!path.isEmpty()) this->save(path);
  });
  connect(csv, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export metrics"), name_->text() + ".csv", tr("CSV (*.csv)"));
    if (!path.isEmpty()) export_csv(path);
  });
  connect(presets_, &QComboBox::activated, this, [this](int index) {
    if (index >= 0 && index < int(preset_list_.size())) set_experiment(preset_list_[size_t(index)]);
  });

  Experiment e;
  e.prompts = QStringList{"Once upon a time", "The little dog"};
  e.configs = {ExperimentConfig::named("1 thread", 1), ExperimentConfig::named("2 threads", 2)};
  set_experiment(e);
  update_buttons();
}

void ExperimentsView::add_config_row(const ExperimentConfig& c) {
  const int row = configs_->rowCount();
  configs_->insertRow(row);
  configs_->setItem(row, kName, new QTableWidgetItem(c.name));
  // As the Settings dialog's list; a saved experiment naming a backend that cannot run here keeps
  // it (its run then reports why).
  auto* backend = new QComboBox(configs_);
  backend->addItem(tr("as in Settings"), QString());
  add_backend_items(backend);
  if (backend->findData(c.backend) < 0) backend->addItem(c.backend, c.backend);   // unknown: kept, refused at run
  backend->setCurrentIndex(backend->findData(c.backend));
  configs_->setCellWidget(row, kBackend, backend);
  auto spin = [&](int col, int value, int lo, int hi, const QString& special = {}) {
    auto* s = new QSpinBox(configs_);
    s->setRange(lo, hi);
    if (!special.isEmpty()) s->setSpecialValueText(special);
    s->setValue(value);
    configs_->setCellWidget(row, col, s);
  };
  spin(kThreads, c.threads, 0, 1024, tr("auto"));  // as the main engine: all cores but one
  spin(kBlockSize, c.block_size, 1, 1024);
  spin(kMaxSeqs, c.max_num_seqs, 1, 4096);
  spin(kMaxBatched, c.max_num_batched_tokens, 1, 1 << 20);
  spin(kTensorParallel, c.tensor_parallel_size, 1, 64);   // ranks as threads; must divide the KV heads
  spin(kPipelineParallel, c.pipeline_parallel_size, 1, 64);
  auto* prefix = new QCheckBox(configs_);
  prefix->setChecked(c.enable_prefix_caching);
  configs_->setCellWidget(row, kPrefixCache, prefix);
  auto* kv = new QComboBox(configs_);
  // The engine's own lists, so the pickers offer exactly what it accepts.
  for (const std::string& d : llmwb::kv_dtypes()) kv->addItem(QString::fromStdString(d));
  kv->setCurrentText(c.kv_dtype);
  configs_->setCellWidget(row, kKvDtype, kv);
  auto* quant = new QComboBox(configs_);
  quant->addItem(QString());   // as stored
  for (const std::string& q : llmwb::quantize_schemes()) quant->addItem(QString::fromStdString(q));
  quant->setCurrentText(c.quantize);
  configs_->setCellWidget(row, kQuantize, quant);
  // Speculative decoding, as in Settings (llmwb::parse_speculative's form; draft:PATH is typed).
  auto* spec = new QComboBox(configs_);
  spec->setEditable(true);
  spec->addItems({"off", "ngram", "ngram:2:4", "self-int4", "layers:2", "draft:"});
  spec->setCurrentText(c.speculative.isEmpty() ? "off" : c.speculative);
  configs_->setCellWidget(row, kSpeculative, spec);
  spin(kSpecK, c.spec_k, 0, 64, tr("adaptive"));
  // As in Settings: a model draft stops guessing below this probability; the minimum reads auto.
  auto* p_min = new QDoubleSpinBox(configs_);
  p_min->setRange(-0.05, 0.95);
  p_min->setSingleStep(0.05);
  p_min->setDecimals(2);
  p_min->setSpecialValueText(tr("auto"));
  p_min->setValue(c.spec_p_min < 0 ? -0.05 : c.spec_p_min);
  configs_->setCellWidget(row, kSpecPMin, p_min);
  // Choosing a scheme is asking what it costs: the accuracy columns come with it.
  connect(quant, &QComboBox::textActivated, this, [this](const QString& scheme) {
    if (!scheme.isEmpty()) accuracy_->setChecked(true);
  });
}

Experiment ExperimentsView::experiment() const {
  Experiment e;
  e.name = name_->text();
  e.prompts = prompts_->toPlainText().split('\n');
  while (e.prompts.size() > 1 && e.prompts.back().isEmpty()) e.prompts.removeLast();
  e.max_tokens = max_tokens_->value();
  e.temperature = float(temperature_->value());
  e.seed = seed_->text().toULongLong();
  e.accuracy = accuracy_->isChecked();
  for (int row = 0; row < configs_->rowCount(); ++row) {
    ExperimentConfig c;
    c.name = configs_->item(row, kName) ? configs_->item(row, kName)->text() : QString("config %1").arg(row + 1);
    c.backend = static_cast<QComboBox*>(configs_->cellWidget(row, kBackend))->currentData().toString();
    c.threads = static_cast<QSpinBox*>(configs_->cellWidget(row, kThreads))->value();
    c.block_size = static_cast<QSpinBox*>(configs_->cellWidget(row, kBlockSize))->value();
    c.max_num_seqs = static_cast<QSpinBox*>(configs_->cellWidget(row, kMaxSeqs))->value();
    c.max_num_batched_tokens = static_cast<QSpinBox*>(configs_->cellWidget(row, kMaxBatched))->value();
    c.enable_prefix_caching = static_cast<QCheckBox*>(configs_->cellWidget(row, kPrefixCache))->isChecked();
    c.kv_dtype = static_cast<QComboBox*>(configs_->cellWidget(row, kKvDtype))->currentText();
    c.quantize = static_cast<QComboBox*>(configs_->cellWidget(row, kQuantize))->currentText();
    c.speculative = static_cast<QComboBox*>(configs_->cellWidget(row, kSpeculative))->currentText().trimmed();
    if (c.speculative == "off") c.speculative.clear();
    c.spec_k = static_cast<QSpinBox*>(configs_->cellWidget(row, kSpecK))->value();
    const double p_min = static_cast<QDoubleSpinBox*>(configs_->cellWidget(row, kSpecPMin))->value();
    c.spec_p_min = p_min < 0 ? -1 : p_min;
    c.tensor_parallel_size = static_cast<QSpinBox*>(configs_->cellWidget(row, kTensorParallel))->value();
    c.pipeline_parallel_size = static_cast<QSpinBox*>(configs_->cellWidget(row, kPipelineParallel))->value();
    e.configs.push_back(c);
  }
  return e;
}

void ExperimentsView::set_experiment(const Experiment& e) {
  name_->setText(e.name);
  prompts_->setPlainText(e.prompts.join('\n'));
  max_tokens_->setValue(e.max_tokens);
  temperature_->setValue(e.temperature);
  seed_->setText(QString::number(e.seed));
  accuracy_->setChecked(e.accuracy);
  {
    const QSignalBlocker block(presets_);
    presets_->setCurrentIndex(presets_->findText(e.name));   // -1 (blank) for an experiment of one's own
  }
  configs_->setRowCount(0);
  for (const auto& c : e.configs) add_config_row(c);
  fit_heights();
}

void ExperimentsView::load_presets(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return;
  const QJsonDocument doc = QJsonDocument::fromJson(f.readAll());
  preset_list_.clear();
  presets_->clear();
  for (const auto& v : doc.array()) {
    try {
      preset_list_.push_back(Experiment::from_json(v.toObject(), path));
      presets_->addItem(preset_list_.back().name);
    } catch (const std::exception& e) {
      emit error(QString::fromStdString(e.what()));
    }
  }
}

void ExperimentsView::set_model_ready(bool ready) {
  ready_ = ready;
  update_buttons();
}

void ExperimentsView::update_buttons() {
  run_->setEnabled(ready_ && !running_);
  cancel_->setEnabled(running_);
}

int ExperimentsView::result_rows() const { return results_->rowCount(); }

void ExperimentsView::run() {
  if (!ready_ || running_) return;
  running_experiment_ = experiment();
  if (running_experiment_.configs.size() < 1) {
    emit error(tr("Add at least one configuration."));
    return;
  }
  results_data_.clear();
  results_->clear();
  results_->setRowCount(0);
  results_->setColumnCount(0);
  outputs_->clear();
  running_ = true;
  status_->setText(tr("starting…"));
  update_buttons();
  emit run_requested(running_experiment_);
}

void ExperimentsView::cancel() {
  if (running_) emit cancel_requested();
}

void ExperimentsView::on_progress(int config_index, const QString& what) {
  status_->setText(tr("%1 (%2 of %3)").arg(what).arg(config_index + 1).arg(running_experiment_.configs.size()));
}

void ExperimentsView::on_result(const ExperimentResult& r) {
  results_data_.push_back(r);
  if (results_->columnCount() == 0) {
    QStringList headers{tr("configuration")};
    for (const auto& [name, value] : r.metrics) headers << name;
    if (r.metrics.empty()) headers << tr("error");
    results_->setColumnCount(headers.size());
    results_->setHorizontalHeaderLabels(headers);
  }
  const int row = results_->rowCount();
  results_->insertRow(row);
  results_->setItem(row, 0, new QTableWidgetItem(r.config_name));
  if (!r.error.isEmpty()) {
    auto* item = new QTableWidgetItem(tr("error: %1").arg(r.error));
    item->setForeground(Qt::red);
    results_->setItem(row, 1, item);
  }
  for (int c = 0; c < int(r.metrics.size()) && c + 1 < results_->columnCount(); ++c) {
    const double v = r.metrics[size_t(c)].second;
    const bool integral = !std::isnan(v) && v == std::floor(v);
    // Small figures (KL divergences) keep three significant digits instead of rounding to 0.00.
    const QString text = std::isnan(v)                             ? QString("–")
                         : integral || std::abs(v) >= 100          ? QString::number(v, 'f', 0)
                         : std::abs(v) < 0.1                       ? QString::number(v, 'g', 3)
                                                                   : QString::number(v, 'f', 2);
    auto* item = new QTableWidgetItem(text);
    item->setData(Qt::UserRole, v);
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    results_->setItem(row, c + 1, item);
  }
  render_outputs();
  fit_heights();
}

void ExperimentsView::on_finished(const QString& error_text) {
  running_ = false;
  status_->setText(error_text.isEmpty() ? tr("done: %1 configurations").arg(results_data_.size()) : error_text);
  if (!error_text.isEmpty() && error_text != "cancelled") emit error(tr("Experiment: %1").arg(error_text));
  update_buttons();
  emit finished();
}

int ExperimentsView::first_divergence(const std::vector<int>& a, const std::vector<int>& b) {
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return int(i);
  return a.size() == b.size() ? -1 : int(n);
}

void ExperimentsView::render_outputs() {
  const QString red = "#d62728";
  QString html = "<table width='100%' cellspacing='0' cellpadding='4' border='1' style='border-collapse:collapse'><tr><th>prompt</th>";
  for (const auto& r : results_data_) html += "<th>" + r.config_name.toHtmlEscaped() + "</th>";
  html += "</tr>";
  for (int p = 0; p < running_experiment_.prompts.size(); ++p) {
    html += "<tr><td valign='top'><i>" + running_experiment_.prompts[p].toHtmlEscaped() + "</i></td>";
    const std::vector<int>* reference = nullptr;
    if (!results_data_.empty() && size_t(p) < results_data_[0].token_ids.size()) reference = &results_data_[0].token_ids[size_t(p)];
    for (const auto& r : results_data_) {
      html += "<td valign='top'>";
      if (!r.error.isEmpty() || size_t(p) >= r.token_ids.size()) {
        html += "<span style='color:" + red + "'>" + r.error.toHtmlEscaped() + "</span></td>";
        continue;
      }
      const auto& ids = r.token_ids[size_t(p)];
      const int diverge = reference && reference != &ids ? first_divergence(*reference, ids) : -1;
      for (int i = 0; i < int(ids.size()); ++i) {
        const int id = ids[size_t(i)];
        const QString piece = token_piece(vocabulary_, id).toHtmlEscaped().replace("\n", "<br/>");
        if (i == diverge)
          html += "<span style='background:" + red + ";color:white' title='first token that differs'>" + piece + "</span>";
        else if (diverge >= 0 && i > diverge)
          html += "<span style='color:" + red + "'>" + piece + "</span>";
        else
          html += piece;
      }
      if (diverge < 0 && reference && reference != &ids) html += " <small>(identical)</small>";
      html += "</td>";
    }
    html += "</tr>";
  }
  html += "</table>";
  outputs_->setHtml(html);
}

void ExperimentsView::fit_heights() {
  // A table shows up to `max_rows` rows without scrolling; the splitter gives way instead.
  auto fit_table = [](QTableWidget* t, int min_rows, int max_rows) {
    int rows = 0;
    for (int r = 0; r < std::min(std::max(t->rowCount(), min_rows), max_rows); ++r)
      rows += r < t->rowCount() ? t->rowHeight(r) : t->verticalHeader()->defaultSectionSize();
    const int scroll = t->horizontalScrollBar()->sizeHint().height();
    t->setMinimumHeight(t->horizontalHeader()->sizeHint().height() + rows + scroll + 2 * t->frameWidth() + 2);
  };
  configs_->resizeRowsToContents();
  fit_table(configs_, 2, 3);
  results_->resizeRowsToContents();
  fit_table(results_, 2, 4);
  fit_outputs(outputs_->document()->size());
}

void ExperimentsView::fit_outputs(const QSizeF& document_size) {
  // The outputs pane as tall as its wrapped text (the document as QTextBrowser lays it out at
  // its viewport's width) up to a cap: a two-line output is never cut between its lines;
  // beyond the cap it scrolls.
  const int text_height = int(std::ceil(document_size.height())) + 2 * outputs_->frameWidth() + 2;
  const int want = std::clamp(text_height, 90, 180);
  if (outputs_->minimumHeight() != want) outputs_->setMinimumHeight(want);
}

QString ExperimentsView::outputs_html() const { return outputs_->toHtml(); }

bool ExperimentsView::save(const QString& path) {
  try {
    experiment().save(path);
    return true;
  } catch (const std::exception& e) {
    emit error(QString::fromStdString(e.what()));
    return false;
  }
}

bool ExperimentsView::load(const QString& path) {
  try {
    set_experiment(Experiment::load(path));
    return true;
  } catch (const std::exception& e) {
    emit error(QString::fromStdString(e.what()));
    return false;
  }
}

bool ExperimentsView::export_csv(const QString& path) {
  // RFC 4180: fields with a comma, quote or newline are quoted, quotes doubled.
  auto field = [](QString s) {
    if (s.contains(',') || s.contains('"') || s.contains('\n')) s = '"' + s.replace("\"", "\"\"") + '"';
    return s;
  };
  QString csv;
  QStringList header;
  for (int c = 0; c < results_->columnCount(); ++c) header << field(results_->horizontalHeaderItem(c)->text());
  csv += header.join(',') + "\r\n";
  for (int r = 0; r < results_->rowCount(); ++r) {
    QStringList row;
    for (int c = 0; c < results_->columnCount(); ++c) {
      const QTableWidgetItem* item = results_->item(r, c);
      if (!item) row << QString();
      else if (item->data(Qt::UserRole).isValid()) row << QString::number(item->data(Qt::UserRole).toDouble(), 'g', 8);
      else row << field(item->text());
    }
    csv += row.join(',') + "\r\n";
  }
  QSaveFile f(path);
  if (f.open(QIODevice::WriteOnly)) {
    f.write(csv.toUtf8());
    if (f.commit()) return true;
  }
  emit error(tr("%1: cannot write: %2").arg(path, f.errorString()));
  return false;
}

}  // namespace llmwb::ui
