// theme.h — light and dark palettes; "system" keeps the platform's own palette, so the
// application follows the desktop's light or dark setting.
#pragma once

#include <QString>

namespace llmwb::ui {

// "system", "light" or "dark". Call after QApplication exists.
void apply_theme(const QString& theme);

}  // namespace llmwb::ui
