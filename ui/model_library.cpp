#include "model_library.h"

#include <QDir>
#include <QDirIterator>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPushButton>
#include <QSettings>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <map>

#include "llmwb/model_probe.h"

namespace llmwb::ui {

namespace {

bool is_tokenizer_name(const QString& name) {
  return name.startsWith("tok", Qt::CaseInsensitive) || name.endsWith(".model");
}

bool has_tokenizer_beside(const QFileInfo& bin) {
  const QDir dir = bin.absoluteDir();
  for (const QString& name : dir.entryList({"tokenizer.bin", "tok*.bin", "*.model", "tokenizer.json"}, QDir::Files))
    if (name != bin.fileName()) return true;
  return false;
}

QString human_params(uint64_t n) {
  if (n >= 1000000000ull) return QString::number(double(n) / 1e9, 'f', 2) + "B";
  if (n >= 1000000ull) return QString::number(double(n) / 1e6, 'f', 1) + "M";
  if (n >= 1000ull) return QString::number(double(n) / 1e3, 'f', 0) + "K";
  return QString::number(n);
}

qint64 size_on_disk(const QString& path) {
  const QFileInfo fi(path);
  if (!fi.isDir()) return fi.size();
  qint64 total = 0;
  QDirIterator it(path, QDir::Files);
  while (it.hasNext()) total += QFileInfo(it.next()).size();
  return total;
}

// Numbers sort as numbers (the item's UserRole), text as text.
class Row : public QTreeWidgetItem {
 public:
  using QTreeWidgetItem::QTreeWidgetItem;
  bool operator<(const QTreeWidgetItem& other) const override {
    const int c = treeWidget() ? treeWidget()->sortColumn() : 0;
    const QVariant a = data(c, Qt::UserRole), b = other.data(c, Qt::UserRole);
    if (a.isValid() && b.isValid()) return a.toDouble() < b.toDouble();
    return text(c).localeAwareCompare(other.text(c)) < 0;
  }
};

}  // namespace

ModelLibrary::ModelLibrary(QWidget* parent)
    : QWidget(parent), folder_(new QLineEdit(this)), table_(new QTreeWidget(this)), status_(new QLabel(this)) {
  setObjectName("model_library");
  folder_->setObjectName("library_folder");
  folder_->setPlaceholderText(tr("Models folder: GGUF files, Hugging Face folders, llama2.c checkpoints"));
  auto* browse = new QPushButton(tr("Choose…"), this);
  auto* rescan_button = new QPushButton(tr("Rescan"), this);
  rescan_button->setToolTip(tr("Scan the folder again (F5)"));
  rescan_button->setShortcut(QKeySequence(Qt::Key_F5));
  table_->setObjectName("library_table");
  table_->setColumnCount(ColumnCount);
  table_->setHeaderLabels({tr("Name"), tr("Architecture"), tr("Parameters"), tr("Quantization"), tr("Size"),
                           tr("Context"), tr("Format"), tr("Path")});
  table_->setRootIsDecorated(false);
  table_->setAlternatingRowColors(true);
  table_->setSortingEnabled(true);
  table_->setUniformRowHeights(true);
  table_->header()->setStretchLastSection(true);
  table_->setToolTip(tr("Double-click or Enter opens the model; its template and sampling come back as last used"));
  status_->setObjectName("library_status");
  status_->setWordWrap(true);

  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("Models folder"), this));
  top->addWidget(folder_, 1);
  top->addWidget(browse);
  top->addWidget(rescan_button);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(table_, 1);
  layout->addWidget(status_);

  connect(browse, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Models folder"), folder());
    if (!dir.isEmpty()) set_folder(dir);
  });
  connect(rescan_button, &QPushButton::clicked, this, &ModelLibrary::rescan);
  connect(folder_, &QLineEdit::editingFinished, this, [this] {
    if (folder_->text() != QSettings().value("library/folder").toString()) set_folder(folder_->text());
  });
  connect(table_, &QTreeWidget::itemActivated, this, [this](QTreeWidgetItem* item) {
    const QString path = item->data(Path, Qt::UserRole + 1).toString();
    if (!path.isEmpty()) emit open_requested(path);
  });
  folder_->setText(QSettings().value("library/folder").toString());
  if (!folder_->text().isEmpty()) rescan();
  else status_->setText(tr("Choose a models folder to list the models in it."));
}

QString ModelLibrary::folder() const { return folder_->text(); }

void ModelLibrary::set_folder(const QString& folder, bool remember) {
  folder_->setText(QDir::cleanPath(folder));
  if (remember) QSettings().setValue("library/folder", folder_->text());
  rescan();
}

QStringList ModelLibrary::find_models(const QString& folder) {
  QStringList out;
  if (folder.isEmpty() || !QFileInfo(folder).isDir()) return out;
  QDirIterator it(folder, QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot, QDirIterator::Subdirectories);
  const int base_depth = QDir::cleanPath(QFileInfo(folder).absoluteFilePath()).count('/');
  while (it.hasNext()) {
    const QString path = it.next();
    const QFileInfo fi = it.fileInfo();
    if (QDir::cleanPath(fi.absoluteFilePath()).count('/') - base_depth > 3) continue;
    if (fi.isDir()) {
      const QDir d(path);
      if (d.exists("config.json") && !d.entryList({"*.safetensors"}, QDir::Files).isEmpty()) out << path;
    } else if (fi.suffix().compare("gguf", Qt::CaseInsensitive) == 0) {
      out << path;
    } else if (fi.suffix() == "bin" && !is_tokenizer_name(fi.fileName()) && has_tokenizer_beside(fi)) {
      out << path;
    }
  }
  out.sort();
  return out;
}

QString ModelLibrary::main_dtype(const ModelInfo& info) {
  std::map<std::string, uint64_t> bytes;
  for (const TensorInfo& t : info.tensors)
    if (t.shape.size() >= 2) bytes[t.dtype] += t.nbytes;
  std::string best;
  uint64_t most = 0;
  for (const auto& [dtype, n] : bytes)
    if (n > most) most = n, best = dtype;
  return QString::fromStdString(best);
}

void ModelLibrary::rescan() {
  table_->setSortingEnabled(false);
  table_->clear();
  unreadable_.clear();
  const QStringList paths = find_models(folder());
  const QLocale locale;
  for (const QString& path : paths) {
    auto* row = new Row(table_);
    row->setData(Path, Qt::UserRole + 1, path);
    row->setText(Path, QDir(folder()).relativeFilePath(path));
    row->setToolTip(Name, path);
    try {
      const ModelInfo info = probe_model(path.toStdString());
      // The file's name (a folder: its path under the models folder): what the user put there;
      // the name inside the file is often just the architecture.
      const QFileInfo fi(path);
      row->setText(Name, fi.isDir() ? QDir(folder()).relativeFilePath(path) : fi.completeBaseName());
      if (!info.name.empty()) row->setToolTip(Name, path + "\n" + tr("name in the file: %1").arg(QString::fromStdString(info.name)));
      row->setText(Architecture, QString::fromStdString(info.architecture));
      row->setText(Parameters, human_params(info.n_params));
      row->setData(Parameters, Qt::UserRole, double(info.n_params));
      row->setText(Quantization, main_dtype(info));
      const qint64 bytes = size_on_disk(path);
      row->setText(Size, locale.formattedDataSize(bytes, 1));
      row->setData(Size, Qt::UserRole, double(bytes));
      const int ctx = info.trained_context_length > 0 ? info.trained_context_length : info.context_length;
      row->setText(Context, QString::number(ctx));
      row->setData(Context, Qt::UserRole, ctx);
      row->setText(Format, QString::fromStdString(info.format));
    } catch (const std::exception& e) {
      row->setText(Name, QFileInfo(path).fileName());
      row->setText(Architecture, tr("unreadable"));
      row->setToolTip(Architecture, QString::fromUtf8(e.what()));
      row->setDisabled(true);
      unreadable_ << path + ": " + QString::fromUtf8(e.what());
    }
  }
  table_->setSortingEnabled(true);
  table_->sortByColumn(Name, Qt::AscendingOrder);
  for (int c = 0; c < Path; ++c) table_->resizeColumnToContents(c);
  QString text = folder().isEmpty() ? tr("Choose a models folder to list the models in it.")
                                    : tr("Models: %1 in %2").arg(paths.size() - unreadable_.size()).arg(folder());
  if (!unreadable_.isEmpty()) text += tr("; %1 could not be read (hover for why)").arg(unreadable_.size());
  if (!paths.isEmpty()) text += tr(" — double-click or Enter opens a model, or drop a file onto the window");
  status_->setText(text);
  status_->setToolTip(unreadable_.join("\n"));
  if (table_->topLevelItemCount() > 0) table_->setCurrentItem(table_->topLevelItem(0));
}

QStringList ModelLibrary::model_paths() const {
  QStringList out;
  for (int i = 0; i < table_->topLevelItemCount(); ++i)
    out << table_->topLevelItem(i)->data(Path, Qt::UserRole + 1).toString();
  return out;
}

}  // namespace llmwb::ui
