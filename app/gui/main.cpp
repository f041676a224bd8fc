// llmwb — the LLM Workbench desktop application.
//
//   llmwb [MODEL] [--model PATH] [--tokenizer PATH] [--screenshot-dir DIR]
//
// Without a model argument it opens the bundled default (stories260K) when one can be found.
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>
#include <QTimer>

#include "screenshot_mode.h"
#include "theme.h"
#include "workbench.h"

namespace {

// The default model: beside an installed binary first, then the source tree's shared/ folder
// (LLMWB_DEFAULT_MODEL, set by CMake). Empty when none exists: the window opens empty.
QString default_model() {
  const QString app_dir = QCoreApplication::applicationDirPath();
  const QStringList candidates = {
      app_dir + "/../share/llmwb/models/stories260K/stories260K.gguf",
      app_dir + "/models/stories260K/stories260K.gguf",
#ifdef LLMWB_DEFAULT_MODEL
      QStringLiteral(LLMWB_DEFAULT_MODEL),
#endif
  };
  for (const QString& c : candidates)
    if (QFileInfo(c).isFile()) return QFileInfo(c).absoluteFilePath();
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName("llmwb");
  QApplication::setApplicationName("llmwb");
  QApplication::setApplicationDisplayName("LLM Workbench");
  QApplication::setApplicationVersion("0.1.0");
  QApplication::setDesktopFileName("llmwb");

  QCommandLineParser parser;
  parser.setApplicationDescription("Run local language models and watch the inference engine work.");
  parser.addHelpOption();
  parser.addVersionOption();
  QCommandLineOption model_opt("model", "Model to open: GGUF file, Hugging Face folder or llama2.c .bin.", "PATH");
  QCommandLineOption tokenizer_opt("tokenizer", "Tokenizer for a llama2.c .bin (.bin or .model).", "PATH");
  QCommandLineOption shots_opt("screenshot-dir",
                               "Open the model, run a short greedy generation, write a PNG of every view into DIR "
                               "and exit.",
                               "DIR");
  QCommandLineOption theme_opt("theme", "Palette for this run: system, light or dark.", "NAME");
  parser.addOption(model_opt);
  parser.addOption(theme_opt);
  parser.addOption(tokenizer_opt);
  parser.addOption(shots_opt);
  parser.addPositionalArgument("model", "Model to open (same as --model).", "[MODEL]");
  parser.process(app);

  QString model = parser.value(model_opt);
  if (model.isEmpty() && !parser.positionalArguments().isEmpty()) model = parser.positionalArguments().first();
  const QString tokenizer = parser.value(tokenizer_opt);

  llmwb::gui::Workbench bench;
  if (parser.isSet(theme_opt)) llmwb::ui::apply_theme(parser.value(theme_opt));
  if (parser.isSet(shots_opt)) {
    if (model.isEmpty()) model = default_model();
    if (model.isEmpty()) {
      fprintf(stderr, "llmwb: --screenshot-dir needs --model PATH (no default model found)\n");
      return 2;
    }
    llmwb::gui::ScreenshotMode shots(bench, model, tokenizer, parser.value(shots_opt));
    QTimer::singleShot(0, &shots, &llmwb::gui::ScreenshotMode::start);
    return QApplication::exec();
  }

  bench.window().show();
  if (model.isEmpty()) model = default_model();
  if (!model.isEmpty()) bench.window().open_model(model, tokenizer);
  return QApplication::exec();
}
