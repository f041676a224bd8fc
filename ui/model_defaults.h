// model_defaults.h — settings remembered per model, keyed by its path: the chat template and
// sampling (ChatView saves them with each turn) and the context length (the engine's
// max_model_len, remembered when changed in Settings while the model is loaded and used when
// it is opened again).
#pragma once

#include <QString>

namespace llmwb::ui::model_defaults {

// The settings group of a model ("models/<hash of the path>"); empty for an empty path.
QString key(const QString& model_path);
// The context length to open the model with; 0 when none is remembered.
int context_length(const QString& model_path);
void set_context_length(const QString& model_path, int max_model_len);

}  // namespace llmwb::ui::model_defaults
