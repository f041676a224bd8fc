#include "quant_view.h"

#include <QComboBox>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSaveFile>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>

#include "error_histogram.h"
#include "llmwb/engine_config.h"
#include "layer_error_chart.h"
#include "message_banner.h"

namespace llmwb::ui {

namespace {

// Sorts by the number in Qt::UserRole, not by the text shown ("1.2e-05" < "9e-06" as text).
class NumberItem : public QTableWidgetItem {
 public:
  NumberItem(const QString& text, double key) : QTableWidgetItem(text) {
    setData(Qt::UserRole, key);
    setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  }
  bool operator<(const QTableWidgetItem& other) const override {
    return data(Qt::UserRole).toDouble() < other.data(Qt::UserRole).toDouble();
  }
};

constexpr int kTensorIndexRole = Qt::UserRole + 1;

QString mib(uint64_t bytes) { return QString::number(double(bytes) / (1024.0 * 1024.0), 'f', 2) + " MiB"; }

QString size_text(uint64_t bytes) {
  if (bytes >= 1024 * 1024) return mib(bytes);
  return QString::number(double(bytes) / 1024.0, 'f', 1) + " KiB";
}

const char* const kHeaders[] = {"tensor", "quantized to", "MSE", "SNR dB", "max |err|", "size"};

}  // namespace

QuantView::QuantView(QWidget* parent)
    : QWidget(parent),
      banner_(new MessageBanner(this)),
      scheme_(new QComboBox(this)),
      text_source_(new QLabel(this)),
      run_(new QPushButton(tr("Run"), this)),
      cancel_(new QPushButton(tr("Cancel"), this)),
      export_(new QPushButton(tr("Export JSON…"), this)),
      progress_(new QProgressBar(this)),
      status_(new QLabel(this)),
      layers_(new LayerErrorChart(this)),
      table_(new QTableWidget(0, kColumns, this)),
      histogram_(new ErrorHistogram(this)),
      text_(builtin_quant_eval_text()),
      text_name_("(built-in sample)") {
  setObjectName("quant_view");
  scheme_->setObjectName("quant_scheme");
  run_->setObjectName("run_quant_report");
  cancel_->setObjectName("cancel_quant_report");
  table_->setObjectName("quant_tensors");
  for (const std::string& s : quantize_schemes()) scheme_->addItem(QString::fromStdString(s));
  scheme_->setCurrentText("int8");
  text_source_->setText(text_name_);
  auto* choose_text = new QPushButton(tr("Text file…"), this);
  auto* builtin_text = new QPushButton(tr("Built-in"), this);
  progress_->setRange(0, 1000);
  progress_->setMaximumWidth(200);
  progress_->hide();

  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("Scheme"), this));
  bar->addWidget(scheme_);
  bar->addSpacing(12);
  bar->addWidget(new QLabel(tr("Evaluation text"), this));
  bar->addWidget(text_source_, 1);
  bar->addWidget(choose_text);
  bar->addWidget(builtin_text);
  bar->addSpacing(12);
  bar->addWidget(run_);
  bar->addWidget(cancel_);
  bar->addWidget(progress_);
  bar->addWidget(export_);

  // End-to-end figures: what a user of the quantized model notices.
  auto* figures_box = new QGroupBox(tr("Quantized against the stored weights"), this);
  auto* form = new QFormLayout(figures_box);
  const std::pair<const char*, QString> rows[] = {{"weights", tr("Weights")},
                                                  {"perplexity", tr("Perplexity")},
                                                  {"kl", tr("KL divergence")},
                                                  {"top1", tr("Top-1 agreement")},
                                                  {"greedy", tr("Greedy tokens")}};
  for (const auto& [key, title] : rows) {
    auto* value = new QLabel("–", figures_box);
    value->setObjectName(QString("figure_") + key);
    value->setTextInteractionFlags(Qt::TextSelectableByMouse);
    value->setWordWrap(true);
    form->addRow(title, value);
    figures_[key] = value;
  }

  for (int c = 0; c < kColumns; ++c) table_->setHorizontalHeaderItem(c, new QTableWidgetItem(tr(kHeaders[c])));
  table_->verticalHeader()->setVisible(false);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setSortingEnabled(true);
  table_->setWordWrap(false);
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  auto* table_box = new QGroupBox(tr("Tensors, worst first (click a header to sort, a row for its histogram)"), this);
  (new QVBoxLayout(table_box))->addWidget(table_);
  auto* layers_box = new QGroupBox(tr("Per-layer error on the calibration prompt"), this);
  (new QVBoxLayout(layers_box))->addWidget(layers_);
  auto* hist_box = new QGroupBox(tr("Error histogram"), this);
  (new QVBoxLayout(hist_box))->addWidget(histogram_);

  auto* left = new QSplitter(Qt::Vertical, this);
  left->addWidget(figures_box);
  left->addWidget(table_box);
  left->setStretchFactor(0, 0);
  left->setStretchFactor(1, 1);
  auto* right = new QSplitter(Qt::Vertical, this);
  right->addWidget(layers_box);
  right->addWidget(hist_box);
  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(left);
  split->addWidget(right);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  split->setSizes({600, 440});

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(banner_);
  layout->addLayout(bar);
  layout->addWidget(split, 1);
  layout->addWidget(status_);

  connect(run_, &QPushButton::clicked, this, &QuantView::run);
  connect(cancel_, &QPushButton::clicked, this, &QuantView::cancel);
  connect(export_, &QPushButton::clicked, this, [this] {
    if (!report_) return;
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export quantization report"),
        QString("quant-report-%1.json").arg(QString::fromStdString(report_->scheme)), tr("JSON (*.json)"));
    if (!path.isEmpty()) export_json(path);
  });
  connect(choose_text, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Evaluation text"), {}, tr("Text (*.txt);;All files (*)"));
    if (!path.isEmpty()) set_text_file(path);
  });
  connect(builtin_text, &QPushButton::clicked, this, [this] { set_text_file({}); });
  connect(table_, &QTableWidget::itemSelectionChanged, this, &QuantView::show_selected_histogram);
  status_->setText(tr("Load a model, pick a scheme and press Run."));
  update_buttons();
}

void QuantView::set_model_ready(bool ready) {
  ready_ = ready;
  update_buttons();
}

void QuantView::set_scheme(const QString& scheme) { scheme_->setCurrentText(scheme); }

QString QuantView::scheme() const { return scheme_->currentText(); }

bool QuantView::set_text_file(const QString& path) {
  if (path.isEmpty()) {
    text_ = builtin_quant_eval_text();
    text_name_ = "(built-in sample)";
  } else {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
      banner_->show_message(MessageBanner::Kind::Error, tr("%1: cannot read: %2").arg(path, f.errorString()));
      return false;
    }
    text_ = f.readAll().toStdString();
    text_name_ = path;
  }
  text_source_->setText(path.isEmpty() ? text_name_ : QFileInfo(path).fileName());
  text_source_->setToolTip(text_name_);
  return true;
}

QuantReportOptions QuantView::options() const {
  QuantReportOptions o;
  o.scheme = scheme_->currentText().toStdString();
  o.text = text_;
  o.text_name = text_name_.toStdString();
  o.threads = 0;   // the worker's: the loaded engine's thread count
  return o;
}

QString QuantView::figure(const QString& key) const {
  const auto it = figures_.find(key);
  return it == figures_.end() ? QString() : it->second->text();
}

void QuantView::update_buttons() {
  run_->setEnabled(ready_ && !running_);
  cancel_->setEnabled(running_);
  export_->setEnabled(report_.has_value() && !running_);
  scheme_->setEnabled(!running_);
}

void QuantView::clear_results() {
  report_.reset();
  table_->setSortingEnabled(false);
  table_->setRowCount(0);
  table_->setSortingEnabled(true);
  layers_->clear();
  histogram_->clear();
  for (auto& [key, label] : figures_) label->setText("–");
}

void QuantView::run() {
  if (running_) return;
  if (!ready_) {
    banner_->show_message(MessageBanner::Kind::Error, tr("Load a model first: the report measures the loaded model."));
    return;
  }
  if (scheme_->currentText().isEmpty()) {
    banner_->show_message(MessageBanner::Kind::Error, tr("Pick a quantization scheme."));
    return;
  }
  banner_->hide();
  clear_results();
  running_ = true;
  progress_->setValue(0);
  progress_->show();
  status_->setText(tr("measuring %1…").arg(scheme_->currentText()));
  update_buttons();
  emit run_requested(options());
}

void QuantView::cancel() {
  if (running_) emit cancel_requested();
}

void QuantView::on_progress(double fraction, const QString& what) {
  if (!running_) return;
  progress_->setValue(int(fraction * 1000));
  progress_->setFormat(QString("%1 %p%").arg(what.left(20)));
}

void QuantView::on_report(const QuantReport& report) {
  running_ = false;
  progress_->hide();
  report_ = report;
  layers_->set_errors(report.outputs, report.n_layers);
  fill_table();
  show_figures();
  status_->setText(tr("%1: %2 tensors quantized; perplexity and KL over %3 tokens of %4")
                       .arg(QString::fromStdString(report.scheme))
                       .arg(report.tensors.size())
                       .arg(report.text.n_scored)
                       .arg(QString::fromStdString(report.text_name)));
  update_buttons();
  emit finished();
}

void QuantView::on_failed(const QString& error, bool cancelled) {
  running_ = false;
  progress_->hide();
  status_->setText(cancelled ? tr("cancelled") : tr("failed"));
  banner_->show_message(cancelled ? MessageBanner::Kind::Info : MessageBanner::Kind::Error,
                        cancelled ? tr("The quantization report was cancelled.") : tr("Quantization report: %1").arg(error));
  update_buttons();
  emit finished();
}

void QuantView::fill_table() {
  table_->setSortingEnabled(false);
  table_->setRowCount(0);
  const auto& tensors = report_->tensors;
  table_->setRowCount(int(tensors.size()));
  for (int i = 0; i < int(tensors.size()); ++i) {
    const TensorError& t = tensors[size_t(i)];
    auto* name = new QTableWidgetItem(QString::fromStdString(t.name));
    name->setData(kTensorIndexRole, i);
    table_->setItem(i, kTensor, name);
    auto* types = new QTableWidgetItem(QString::fromStdString(t.to));
    types->setToolTip(QString::fromStdString(t.from + " → " + t.to));
    table_->setItem(i, kTypes, types);
    table_->setItem(i, kMse, new NumberItem(QString::number(t.mse, 'g', 4), t.mse));
    table_->setItem(i, kSnr, new NumberItem(std::isfinite(t.snr_db) ? QString::number(t.snr_db, 'f', 2) : QString("∞"),
                                            t.snr_db));
    table_->setItem(i, kMaxErr, new NumberItem(QString::number(t.max_abs, 'g', 4), t.max_abs));
    auto* size = new NumberItem(QString("%1 (%2%)").arg(size_text(t.bytes_to)).arg(100.0 * double(t.bytes_to) / double(t.bytes_from), 0, 'f', 0),
                                double(t.bytes_to));
    size->setToolTip(tr("%1 stored").arg(size_text(t.bytes_from)));
    table_->setItem(i, kSize, size);
  }
  table_->setSortingEnabled(true);
  // Worst first: the largest mean squared error on top.
  table_->sortItems(kMse, Qt::DescendingOrder);
  if (table_->rowCount() > 0) table_->selectRow(0);
}

void QuantView::show_selected_histogram() {
  const auto rows = table_->selectionModel()->selectedRows(kTensor);
  if (!report_ || rows.isEmpty()) return;
  const int i = table_->item(rows.first().row(), kTensor)->data(kTensorIndexRole).toInt();
  if (i >= 0 && i < int(report_->tensors.size())) histogram_->set_tensor(report_->tensors[size_t(i)]);
}

void QuantView::show_figures() {
  const QuantReport& r = *report_;
  const TextScore& s = r.text;
  figures_["weights"]->setText(tr("%1 → %2 (%3% of stored)")
                                   .arg(mib(r.weight_bytes_before), mib(r.weight_bytes_after))
                                   .arg(100.0 * double(r.weight_bytes_after) / double(r.weight_bytes_before), 0, 'f', 1));
  figures_["perplexity"]->setText(tr("%1 stored → %2 quantized (%3%4%)")
                                      .arg(s.ppl_ref, 0, 'f', 4)
                                      .arg(s.ppl_quant, 0, 'f', 4)
                                      .arg(s.ppl_quant >= s.ppl_ref ? "+" : "")
                                      .arg(100.0 * (s.ppl_quant / s.ppl_ref - 1.0), 0, 'f', 3));
  figures_["kl"]->setText(tr("mean %1, max %2 nats per token").arg(s.kl_mean, 0, 'g', 4).arg(s.kl_max, 0, 'g', 4));
  figures_["top1"]->setText(tr("%1% of %2 positions").arg(100.0 * s.top1_agreement, 0, 'f', 2).arg(s.n_scored));
  const GreedyAgreement& g = r.greedy;
  figures_["greedy"]->setText(g.first_divergence < 0
                                  ? tr("%1 / %2 the same from BOS").arg(g.n_same).arg(g.n_tokens)
                                  : tr("%1 / %2 the same from BOS, first difference at token %3")
                                        .arg(g.n_same)
                                        .arg(g.n_tokens)
                                        .arg(g.first_divergence));
}

bool QuantView::export_json(const QString& path) {
  if (!report_) {
    banner_->show_message(MessageBanner::Kind::Error, tr("Run a report first."));
    return false;
  }
  QSaveFile f(path);
  if (f.open(QIODevice::WriteOnly)) {
    f.write(QByteArray::fromStdString(quant_report_json(*report_) + "\n"));
    if (f.commit()) return true;
  }
  banner_->show_message(MessageBanner::Kind::Error, tr("%1: cannot write: %2").arg(path, f.errorString()));
  return false;
}

}  // namespace llmwb::ui
