// model_library.h — the models folder (a setting) scanned for GGUF files, Hugging Face
// safetensors folders and llama2.c checkpoints with a tokenizer beside them, listed with name,
// architecture, parameters, quantization, size and context length read from their headers
// (llmwb::probe_model: no weights loaded). Double-click or Enter opens a model.
#pragma once

#include <QString>
#include <QStringList>
#include <QWidget>

#include "llmwb/model_info.h"

class QLabel;
class QLineEdit;
class QTreeWidget;

namespace llmwb::ui {

class ModelLibrary : public QWidget {
  Q_OBJECT

 public:
  enum Column { Name, Architecture, Parameters, Quantization, Size, Context, Format, Path, ColumnCount };

  explicit ModelLibrary(QWidget* parent = nullptr);

  // Sets the models folder (saved as the "library/folder" setting unless `remember` is false:
  // the screenshot mode) and scans it.
  void set_folder(const QString& folder, bool remember = true);
  QString folder() const;
  QTreeWidget* table() const { return table_; }
  // The model paths found by the last scan, in the table's order; those that could not be
  // read ("path: why") apart.
  QStringList model_paths() const;
  QStringList unreadable() const { return unreadable_; }

  // Candidates under `folder` (up to three levels down): *.gguf, folders with config.json and
  // *.safetensors, llama2.c *.bin with a tokenizer (tokenizer.bin, tok*.bin, *.model) beside.
  static QStringList find_models(const QString& folder);
  // The dtype holding most of the weights' bytes ("Q8_0", "F16").
  static QString main_dtype(const ModelInfo& info);

 public slots:
  void rescan();

 signals:
  void open_requested(const QString& path);

 private:
  QLineEdit* folder_;
  QTreeWidget* table_;
  QLabel* status_;
  QStringList unreadable_;
};

}  // namespace llmwb::ui
