// llmwb — the LLM Workbench desktop application.
//
//   llmwb [MODEL] [--model PATH] [--tokenizer PATH] [--screenshot-dir DIR]
//   llmwb --smoke-test [--model PATH]
//   llmwb --version
//   llmwb --bench-gui N [--bench-view NAME] [--bench-headless] [--bench-chat text|markdown] [--threads T]
//         [--max-tokens M] [MODEL]
//   llmwb --bench-gui N --bench-ab [--bench-phase-ms MS] [--bench-settle-ms MS] [...] [MODEL]
//
// Without a model argument it opens the demo model (stories260K) when one can be found: the
// installed copy first (llmwb/default_model.h).
#include <QApplication>
#include <QCommandLineParser>
#include <QTimer>

#include <cstring>

#include "bench_mode.h"
#include "llmwb/build_info.h"
#include "llmwb/default_model.h"
#include "screenshot_mode.h"
#include "smoke_mode.h"
#include "theme.h"
#include "workbench.h"

int main(int argc, char** argv) {
  // The headless benchmark opens no window: it must not need (or be disturbed by) a display.
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--bench-headless") == 0) qputenv("QT_QPA_PLATFORM", "offscreen");
  // --version needs no display either: answered before Qt looks for one.
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--version") == 0 || std::strcmp(argv[i], "-v") == 0) {
      fputs(llmwb::build_info_text().c_str(), stdout);
      return 0;
    }
  QApplication app(argc, argv);
  QApplication::setOrganizationName("llmwb");
  QApplication::setApplicationName("llmwb");
  QApplication::setApplicationDisplayName("LLM Workbench");
  QApplication::setApplicationVersion(QString::fromStdString(llmwb::build_info().version));
  QApplication::setDesktopFileName("llmwb");

  QCommandLineParser parser;
  parser.setApplicationDescription("Run local language models and watch the inference engine work.");
  parser.addHelpOption();
  QCommandLineOption version_opt(QStringList{"v", "version"}, "Version, commit and build options (read before this).");
  parser.addOption(version_opt);
  QCommandLineOption model_opt("model", "Model to open: GGUF file, Hugging Face folder or llama2.c .bin.", "PATH");
  QCommandLineOption tokenizer_opt("tokenizer", "Tokenizer for a llama2.c .bin (.bin or .model).", "PATH");
  QCommandLineOption shots_opt("screenshot-dir",
                               "Open the model, run a short greedy generation, write a PNG of every view into DIR "
                               "and exit.",
                               "DIR");
  QCommandLineOption bench_opt("bench-gui",
                               "Run N greedy generations in the window with the live charts shown, print tok/s and "
                               "CPU time as one JSON line and exit (see tools/bench_gui_overhead.sh).",
                               "N");
  QCommandLineOption bench_view_opt("bench-view", "With --bench-gui: the dock raised: throughput (default), kv, "
                                    "timeline, attention or none.", "NAME", "throughput");
  QCommandLineOption bench_headless_opt("bench-headless",
                                        "With --bench-gui: the same generations with no window (the baseline).");
  QCommandLineOption bench_paints_opt("bench-paints", "With --bench-gui: also count paint events by widget class.");
  QCommandLineOption bench_shot_opt("bench-screenshot",
                                    "With --bench-gui: a PNG of the window partway through the middle generation.",
                                    "FILE");
  QCommandLineOption bench_ab_opt("bench-ab",
                                  "With --bench-gui: measure in one process, alternating live phases (results "
                                  "shown, charts drawn) and quiet ones (nothing delivered or drawn) and comparing "
                                  "the engine's steps in adjacent phases.");
  QCommandLineOption bench_phase_opt("bench-phase-ms", "With --bench-ab: length of each phase (default 250).", "MS");
  QCommandLineOption bench_settle_opt("bench-settle-ms",
                                      "With --bench-ab: steps this soon after a switch are left out (default 40).",
                                      "MS");
  QCommandLineOption bench_chat_opt("bench-chat",
                                    "With --bench-gui: generate in the Chat view, a new chat each time: 'text' (the "
                                    "model's reply) or 'markdown' (a long Markdown answer shown in place of the "
                                    "model's text, character for character).",
                                    "MODE");
  QCommandLineOption threads_opt("threads", "With --bench-gui: engine threads (default: the automatic choice).", "T");
  QCommandLineOption max_tokens_opt("max-tokens", "With --bench-gui: tokens per generation at most.", "M");
  QCommandLineOption theme_opt("theme", "Palette for this run: system, light or dark.", "NAME");
  parser.addOption(model_opt);
  parser.addOption(theme_opt);
  parser.addOption(tokenizer_opt);
  parser.addOption(shots_opt);
  QCommandLineOption smoke_opt("smoke-test",
                               "Open the model (default: the demo), generate a few tokens, render every view once "
                               "and exit: 0 when all worked, 1 with the reason on stderr.");
  parser.addOption(smoke_opt);
  for (const auto* o : {&bench_opt, &bench_view_opt, &bench_headless_opt, &bench_paints_opt, &bench_shot_opt, &bench_ab_opt,
                        &bench_phase_opt, &bench_settle_opt, &bench_chat_opt, &threads_opt, &max_tokens_opt})
    parser.addOption(*o);
  parser.addPositionalArgument("model", "Model to open (same as --model).", "[MODEL]");
  parser.process(app);

  QString model = parser.value(model_opt);
  if (model.isEmpty() && !parser.positionalArguments().isEmpty()) model = parser.positionalArguments().first();
  const QString tokenizer = parser.value(tokenizer_opt);

  if (parser.isSet(bench_opt)) {
    llmwb::gui::BenchOptions o;
    o.model = model.isEmpty() ? QString::fromStdString(llmwb::find_default_model()) : model;
    o.tokenizer = tokenizer;
    o.view = parser.value(bench_view_opt);
    o.count_paints = parser.isSet(bench_paints_opt);
    o.screenshot = parser.value(bench_shot_opt);
    o.chat = parser.value(bench_chat_opt);
    bool ok = true;
    auto number = [&](const QCommandLineOption& opt, int fallback, int low) {
      if (!parser.isSet(opt)) return fallback;
      bool good = false;
      const int v = parser.value(opt).toInt(&good);
      if (!good || v < low) {
        fprintf(stderr, "llmwb: --%s: '%s' is not a whole number >= %d\n", qPrintable(opt.names().first()),
                qPrintable(parser.value(opt)), low);
        ok = false;
      }
      return v;
    };
    o.generations = number(bench_opt, o.generations, 1);
    o.threads = number(threads_opt, o.threads, 0);
    o.max_tokens = number(max_tokens_opt, o.max_tokens, 1);
    const int phase_ms = number(bench_phase_opt, 250, 1);
    o.ab_settle_ms = number(bench_settle_opt, o.ab_settle_ms, 0);
    if (parser.isSet(bench_ab_opt)) o.ab_phase_ms = phase_ms;
    if (ok && o.ab_phase_ms > 0 && o.ab_phase_ms <= o.ab_settle_ms) {
      fprintf(stderr, "llmwb: --bench-phase-ms: %d is not longer than the settle time (%d ms)\n", o.ab_phase_ms,
              o.ab_settle_ms);
      ok = false;
    }
    if (ok && parser.isSet(bench_ab_opt) && parser.isSet(bench_headless_opt)) {
      fprintf(stderr, "llmwb: --bench-ab needs the window: it cannot be combined with --bench-headless\n");
      ok = false;
    }
    if (!ok) return 2;
    if (o.model.isEmpty()) {
      fprintf(stderr, "llmwb: --bench-gui needs --model PATH (no default model found)\n");
      return 2;
    }
    return parser.isSet(bench_headless_opt) ? llmwb::gui::run_headless_bench(o) : llmwb::gui::run_gui_bench(o);
  }

  llmwb::gui::Workbench bench;
  if (parser.isSet(theme_opt)) llmwb::ui::apply_theme(parser.value(theme_opt));
  if (parser.isSet(smoke_opt)) {
    if (model.isEmpty()) model = QString::fromStdString(llmwb::find_default_model());
    if (model.isEmpty()) {
      fprintf(stderr, "llmwb --smoke-test: error: no model: give --model PATH (no demo model at %s)\n",
              llmwb::default_model_locations().front().c_str());
      return 1;
    }
    llmwb::gui::SmokeMode smoke(bench, model, tokenizer);
    QTimer::singleShot(0, &smoke, &llmwb::gui::SmokeMode::start);
    return QApplication::exec();
  }
  if (parser.isSet(shots_opt)) {
    if (model.isEmpty()) model = QString::fromStdString(llmwb::find_default_model());
    if (model.isEmpty()) {
      fprintf(stderr, "llmwb: --screenshot-dir needs --model PATH (no default model found)\n");
      return 2;
    }
    llmwb::gui::ScreenshotMode shots(bench, model, tokenizer, parser.value(shots_opt));
    QTimer::singleShot(0, &shots, &llmwb::gui::ScreenshotMode::start);
    return QApplication::exec();
  }

  bench.window().show();
  if (model.isEmpty()) model = QString::fromStdString(llmwb::find_default_model());
  if (!model.isEmpty()) bench.window().open_model(model, tokenizer);
  return QApplication::exec();
}
