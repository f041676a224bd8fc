#include "settings_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QVBoxLayout>

#include "llmwb/backends.h"
#include "llmwb/distributed.h"
#include "llmwb/errors.h"

namespace llmwb::ui {

void add_backend_items(QComboBox* box) {
  for (const BackendInfo& b : list_backends()) {
    box->addItem(QString::fromStdString(b.label), QString::fromStdString(b.name));
    if (b.available) continue;
    const int i = box->count() - 1;
    if (auto* m = qobject_cast<QStandardItemModel*>(box->model())) m->item(i)->setEnabled(false);
    box->setItemData(i, QString::fromStdString(b.reason), Qt::ToolTipRole);
  }
}

bool backend_item_enabled(const QComboBox* box, int i) {
  const auto* m = qobject_cast<const QStandardItemModel*>(box->model());
  return !m || m->item(i)->isEnabled();
}

SettingsDialog::SettingsDialog(const AppSettings& s, QWidget* parent)
    : QDialog(parent),
      base_(s),
      backend_(new QComboBox(this)),
      threads_(new QSpinBox(this)),
      block_size_(new QSpinBox(this)),
      max_num_seqs_(new QSpinBox(this)),
      max_batched_(new QSpinBox(this)),
      max_model_len_(new QSpinBox(this)),
      kv_memory_(new QSpinBox(this)),
      kv_dtype_(new QComboBox(this)),
      prefix_cache_(new QCheckBox(tr("reuse KV blocks of shared prompt prefixes"), this)),
      speculative_(new QComboBox(this)),
      spec_k_(new QSpinBox(this)),
      spec_p_min_(new QDoubleSpinBox(this)),
      tensor_parallel_(new QSpinBox(this)),
      pipeline_parallel_(new QSpinBox(this)),
      dist_(new QComboBox(this)),
      parallel_ranks_(new QLabel(this)),
      parallel_error_(new QLabel(this)),
      buttons_(new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this)),
      step_delay_(new QSpinBox(this)),
      theme_(new QComboBox(this)) {
  setWindowTitle(tr("Settings"));
  add_backend_items(backend_);
  {
    const int i = backend_->findData(s.backend);
    backend_->setCurrentIndex(i >= 0 && backend_item_enabled(backend_, i) ? i : 0);
  }
  threads_->setRange(0, 1024);
  threads_->setSpecialValueText(tr("automatic (all cores but one)"));
  threads_->setValue(s.threads);
  block_size_->setRange(1, 1024);
  block_size_->setValue(s.block_size);
  max_num_seqs_->setRange(1, 4096);
  max_num_seqs_->setValue(s.max_num_seqs);
  max_batched_->setRange(1, 1 << 20);
  max_batched_->setValue(s.max_num_batched_tokens);
  max_model_len_->setRange(0, 1 << 22);
  max_model_len_->setSpecialValueText(tr("the model's own"));
  max_model_len_->setValue(s.max_model_len);
  kv_memory_->setRange(0, 1 << 20);
  kv_memory_->setSuffix(" MiB");
  kv_memory_->setSpecialValueText(tr("automatic"));
  kv_memory_->setValue(s.kv_memory_mib);
  // The engine's own list; int8 holds ~4x the blocks in the same memory.
  for (const std::string& d : kv_dtypes()) kv_dtype_->addItem(QString::fromStdString(d));
  kv_dtype_->setCurrentIndex(std::max(0, kv_dtype_->findText(s.kv_dtype)));
  prefix_cache_->setChecked(s.enable_prefix_caching);
  speculative_->setObjectName("speculative");
  speculative_->setEditable(true);
  speculative_->addItems({"off", "ngram", "ngram:2:4", "self-int4", "layers:2", "draft:"});
  speculative_->setCurrentText(s.speculative);
  speculative_->setToolTip(tr("Speculative decoding: a cheap proposer guesses tokens that the model checks in one pass; "
                              "the output is unchanged. ngram: prompt lookup; self-int4: the model's own weights at 4 "
                              "bits; layers:K: its first K layers; draft:PATH: a smaller model with the same vocabulary"));
  spec_k_->setRange(0, 64);
  spec_k_->setSpecialValueText(tr("adaptive"));
  spec_k_->setValue(s.spec_k);
  spec_k_->setToolTip(tr("Adaptive: each conversation guesses deeper while its guesses are kept and stops "
                         "guessing where the measured cost of a draft and a verify pass outweighs the "
                         "tokens they yield (the timeline shows the costs)."));
  spec_p_min_->setObjectName("spec_p_min");
  spec_p_min_->setRange(-0.05, 0.95);
  spec_p_min_->setSingleStep(0.05);
  spec_p_min_->setDecimals(2);
  spec_p_min_->setSpecialValueText(tr("automatic"));
  spec_p_min_->setValue(s.spec_p_min < 0 ? -0.05 : s.spec_p_min);
  spec_p_min_->setToolTip(tr("A draft model stops guessing after a token it gives less than this probability "
                             "(keeping that token): the guesses after a doubted one are the ones the model "
                             "rejects, and each costs a draft pass. "
                             "0: always guess the full count. Automatic: with adaptive guesses, the bytes a draft pass "
                             "reads as a share of a model step's; with a fixed count, 0. ngram ignores it."));
  step_delay_->setRange(0, 2000);
  step_delay_->setSuffix(" ms");
  step_delay_->setSpecialValueText(tr("off"));
  step_delay_->setValue(s.step_delay_ms);
  theme_->addItem(tr("Follow the system"), "system");
  theme_->addItem(tr("Light"), "light");
  theme_->addItem(tr("Dark"), "dark");
  theme_->setCurrentIndex(std::max(0, theme_->findData(s.theme)));

  auto* engine = new QGroupBox(tr("Engine (applied when a model is opened)"), this);
  auto* ef = new QFormLayout(engine);
  ef->addRow(tr("Backend"), backend_);
  ef->addRow(tr("CPU threads"), threads_);
  ef->addRow(tr("KV block size (tokens)"), block_size_);
  ef->addRow(tr("Max sequences per step"), max_num_seqs_);
  ef->addRow(tr("Max tokens per step"), max_batched_);
  ef->addRow(tr("Context length"), max_model_len_);
  ef->addRow(tr("KV cache memory"), kv_memory_);
  ef->addRow(tr("KV cache element type"), kv_dtype_);
  ef->addRow(tr("Prefix cache"), prefix_cache_);
  ef->addRow(tr("Speculative decoding"), speculative_);
  ef->addRow(tr("Guessed tokens per step"), spec_k_);
  ef->addRow(tr("Stop guessing below draft probability"), spec_p_min_);
  // Parallelism: ranks as threads of this process (docs/PARALLEL.md).
  tensor_parallel_->setObjectName("tensor_parallel_size");
  tensor_parallel_->setRange(1, 64);
  tensor_parallel_->setValue(s.tensor_parallel_size);
  tensor_parallel_->setToolTip(tr("Tensor parallelism (Megatron-LM): every layer's matrices split across this many "
                                  "ranks, two all-reduces per layer. Must divide the model's KV heads."));
  pipeline_parallel_->setObjectName("pipeline_parallel_size");
  pipeline_parallel_->setRange(1, 64);
  pipeline_parallel_->setValue(s.pipeline_parallel_size);
  pipeline_parallel_->setToolTip(tr("Pipeline parallelism: the layers split into this many contiguous stages, each "
                                    "handing its residual stream to the next. At most one stage per layer."));
  dist_->setObjectName("dist");
  dist_->addItem(tr("threads (ranks in this process)"), "threads");
  dist_->addItem(tr("MPI (processes, llmwb-cli only)"), "mpi");
  if (auto* m = qobject_cast<QStandardItemModel*>(dist_->model())) m->item(1)->setEnabled(false);
  const QString why_threads =
      tr("The GUI runs its ranks as threads of its own process, talking through shared memory. MPI starts one "
         "process per rank under mpirun, which a desktop window cannot be: use llmwb-cli --dist mpi for that.");
  dist_->setItemData(1, why_threads, Qt::ToolTipRole);
  dist_->setToolTip(why_threads);
  parallel_error_->setObjectName("parallel_error");
  parallel_error_->setWordWrap(true);
  parallel_error_->setStyleSheet("color: #c0392b;");
  parallel_ranks_->setWordWrap(true);
  auto* parallel = new QGroupBox(tr("Parallelism (the open model reopens with a new layout)"), this);
  auto* pf = new QFormLayout(parallel);
  pf->addRow(tr("Tensor parallel size"), tensor_parallel_);
  pf->addRow(tr("Pipeline parallel size"), pipeline_parallel_);
  pf->addRow(tr("Distribution"), dist_);
  pf->addRow(parallel_ranks_);
  pf->addRow(parallel_error_);
  for (QSpinBox* b : {tensor_parallel_, pipeline_parallel_})
    connect(b, &QSpinBox::valueChanged, this, &SettingsDialog::update_parallel_check);
  connect(backend_, &QComboBox::currentIndexChanged, this, &SettingsDialog::update_parallel_check);
  connect(speculative_, &QComboBox::currentTextChanged, this, &SettingsDialog::update_parallel_check);
  auto* view = new QGroupBox(tr("View"), this);
  auto* vf = new QFormLayout(view);
  vf->addRow(tr("Slow motion per step"), step_delay_);
  vf->addRow(tr("Theme"), theme_);
  connect(buttons_, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(engine);
  layout->addWidget(parallel);
  layout->addWidget(view);
  layout->addWidget(buttons_);
  update_parallel_check();
}

QPushButton* SettingsDialog::ok_button() const { return buttons_->button(QDialogButtonBox::Ok); }

void SettingsDialog::set_model(const ModelInfo& model) {
  model_ = model;
  update_parallel_check();
}

QString SettingsDialog::parallel_error() const {
  const int tp = tensor_parallel_->value(), pp = pipeline_parallel_->value();
  if (tp == 1 && pp == 1) return {};
  if (backend_->currentData().toString() != "cpu")
    return tr("Tensor and pipeline parallelism run on the CPU backend (ranks as threads): choose the CPU backend "
              "or sizes of 1.");
  if (pp > 1 && speculative_->currentText().trimmed().startsWith("layers"))
    return tr("pipeline_parallel_size: speculative decoding's early-exit draft (layers:K) runs with pipeline "
              "parallel size 1.");
  if (model_) {
    try {
      check_parallel_layout(*model_, tp, pp);
    } catch (const Error& e) {
      return QString::fromStdString(e.what());
    }
  }
  return {};
}

void SettingsDialog::update_parallel_check() {
  const int tp = tensor_parallel_->value(), pp = pipeline_parallel_->value();
  QString ranks = tp * pp == 1 ? tr("One rank: no parallelism.")
                               : tr("%1 ranks (%2 x %3), threads of this process sharing the CPU threads above.")
                                     .arg(tp * pp)
                                     .arg(tp)
                                     .arg(pp);
  if (model_ && model_->n_kv_heads > 0)
    ranks += " " + tr("The loaded model has %1 KV heads and %2 layers.").arg(model_->n_kv_heads).arg(model_->n_layers);
  parallel_ranks_->setText(ranks);
  const QString error = parallel_error();
  parallel_error_->setText(error);
  parallel_error_->setVisible(!error.isEmpty());
  ok_button()->setEnabled(error.isEmpty());
}

AppSettings SettingsDialog::settings() const {
  AppSettings s = base_;
  s.backend = backend_->currentData().toString();
  s.threads = threads_->value();
  s.block_size = block_size_->value();
  s.max_num_seqs = max_num_seqs_->value();
  s.max_num_batched_tokens = max_batched_->value();
  s.max_model_len = max_model_len_->value();
  s.kv_memory_mib = kv_memory_->value();
  s.kv_dtype = kv_dtype_->currentText();
  s.enable_prefix_caching = prefix_cache_->isChecked();
  s.speculative = speculative_->currentText().trimmed();
  if (s.speculative.isEmpty()) s.speculative = "off";
  s.spec_k = spec_k_->value();
  s.spec_p_min = spec_p_min_->value() < 0 ? -1 : spec_p_min_->value();
  s.tensor_parallel_size = tensor_parallel_->value();
  s.pipeline_parallel_size = pipeline_parallel_->value();
  s.step_delay_ms = step_delay_->value();
  s.theme = theme_->currentData().toString();
  return s;
}

void SettingsDialog::accept() {
  try {
    parse_speculative(settings().speculative.toStdString());
  } catch (const Error& e) {
    QMessageBox::warning(this, tr("Speculative decoding"), QString::fromStdString(e.what()));
    return;
  }
  if (!parallel_error().isEmpty()) return;   // shown inline, OK disabled
  QDialog::accept();
}

}  // namespace llmwb::ui
