// model_info_panel.h — what the loaded model is: format, architecture, parameters, dtype /
// quantization, context length, tokenizer, chat format.
#pragma once

#include <QWidget>

#include "llmwb/model_info.h"

class QFormLayout;
class QLabel;

namespace llmwb::ui {

class ModelInfoPanel : public QWidget {
  Q_OBJECT

 public:
  explicit ModelInfoPanel(QWidget* parent = nullptr);

  void set_info(const ModelInfo& info, const QString& chat_format);
  void clear();
  // The value shown for a row ("Format", "Parameters", ...), for tests.
  QString value(const QString& row) const;

 private:
  void set_row(const QString& row, const QString& value);

  QFormLayout* form_;
};

// "260.1 K", "6.74 B": parameter counts as people say them.
QString human_count(double n);
// "1.2 MiB"
QString human_bytes(double bytes);

}  // namespace llmwb::ui
