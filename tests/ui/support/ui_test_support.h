// ui_test_support.h — helpers for the Qt Test programs that drive the real application.
#pragma once

#include <QString>

#include <memory>

#include "workbench.h"

namespace llmwb::uitest {

// ../shared/<rel> beside the repository (read-only models).
QString shared_path(const QString& rel);
// A fresh, empty folder for one test under the build tree.
QString scratch_dir(const QString& name);
QString read_text(const QString& path);
QString stories_gguf();

// Settings, window state and conversations go to Qt's test locations, emptied first, so a
// test neither reads nor writes the user's own.
void isolate_user_data();

// The application as a user starts it, on fresh user data, its window shown with `view` raised.
std::unique_ptr<gui::Workbench> start_application(ui::MainWindow::View view);

// Opens `path` the way File ▸ Open does and waits until the model is loaded; false on
// failure or timeout (QTest reports which).
bool open_model_and_wait(ui::MainWindow& window, const QString& path, int timeout_ms = 120000);

}  // namespace llmwb::uitest
