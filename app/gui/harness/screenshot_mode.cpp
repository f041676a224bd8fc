#include "screenshot_mode.h"
#include "wait_for_events.h"

#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QComboBox>
#include <QFileInfo>
#include <QPlainTextEdit>
#include <QTabWidget>
#include <QTableWidget>
#include <QScrollBar>
#include <QTextBrowser>
#include <QTextStream>
#include <QThread>
#include <QTimer>

#include <cstdio>

#include "attention_heatmap.h"
#include "chat_view.h"
#include "completion_view.h"
#include "experiments_view.h"
#include "llmwb/distributed.h"
#include "llmwb/errors.h"
#include "llmwb/chat_template.h"
#include "model_library.h"
#include "parallelism_view.h"
#include "quant_view.h"
#include "sampling_params_editor.h"
#include "settings_dialog.h"
#include "step_inspector_view.h"

namespace llmwb::gui {

using ui::MainWindow;

ScreenshotMode::ScreenshotMode(Workbench& bench, QString model, QString tokenizer, QString dir)
    : bench_(bench), model_(std::move(model)), tokenizer_(std::move(tokenizer)), dir_(std::move(dir)) {}

void ScreenshotMode::start() {
  if (!QDir().mkpath(dir_)) return fail(dir_ + ": cannot create the folder");
  MainWindow& w = bench_.window();
  w.resize(1440, 960);
  w.show();
  connect(&w, &MainWindow::model_ready, this, &ScreenshotMode::on_model_ready, Qt::SingleShotConnection);
  connect(&bench_.worker(), &EngineWorker::load_failed, this,
          [this](quint64, const QString& error, bool) { fail("cannot open the model: " + error); });
  if (!w.open_model(model_, tokenizer_)) fail(model_ + ": cannot open");
}

bool ScreenshotMode::wait_for(const std::function<bool()>& done, double seconds) {
  return wait_for_events(done, seconds);
}

bool ScreenshotMode::capture(const QString& name) {
  // Let layouts settle and queued replots run before grabbing.
  wait_for([] { return false; }, 0.25);
  const QString path = QDir(dir_).filePath(name + ".png");
  if (!bench_.window().grab().save(path)) {
    fail(path + ": cannot write the PNG");
    return false;
  }
  written_ << path;
  return true;
}

void ScreenshotMode::on_model_ready() {
  MainWindow& w = bench_.window();
  // Slow motion so the live views are caught mid-generation, as a person would see them.
  emit w.step_delay_requested(8);
  w.show_view(MainWindow::View::Attention);  // the heatmap is captured only while shown
  w.show_view(MainWindow::View::Completion);
  ui::CompletionView* c = w.completion_view();
  c->prompt_editor()->setPlainText({});
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  greedy.max_tokens = 160;
  c->sampling()->set_params(greedy);
  c->generate();
  if (!wait_for([c] { return c->generated_tokens() >= 48 || !c->is_generating(); }, 60))
    return fail("no tokens within 60 s");
  on_completion_running();
}

void ScreenshotMode::on_completion_running() {
  MainWindow& w = bench_.window();
  if (!capture("attention")) return;
  w.show_view(MainWindow::View::KvCache);
  if (!capture("kv_cache")) return;
  w.show_view(MainWindow::View::Timeline);
  if (!capture("timeline")) return;
  w.show_view(MainWindow::View::Throughput);
  if (!capture("completion")) return;
  ui::CompletionView* c = w.completion_view();
  if (!wait_for([c] { return !c->is_generating(); }, 120)) return fail("the generation did not finish");
  if (c->last_finish_reason() == FinishReason::Error) return fail("the generation failed");
  on_completion_done();
}

void ScreenshotMode::on_completion_done() {
  MainWindow& w = bench_.window();
  emit w.step_delay_requested(0);
  // The token inspector on the 12th token: the sampler's view, then the logit lens.
  w.show_view(MainWindow::View::Completion);
  ui::CompletionView* c = w.completion_view();
  c->inspect(11);
  ui::StepInspectorView* in = c->inspector();
  if (!wait_for([in] { return in->has_step(); }, 30)) return fail("the token inspector recorded no step");
  in->sampler_table()->selectRow(1);
  // The docks below make room for it, as a person inspecting would.
  QList<QDockWidget*> hidden;
  for (QDockWidget* d : w.findChildren<QDockWidget*>())
    if (d->isVisible() && w.dockWidgetArea(d) == Qt::BottomDockWidgetArea) {
      d->hide();
      hidden << d;
    }
  const bool shot = capture("inspector") && (in->tabs()->setCurrentIndex(1), capture("inspector_lens")) &&
                    (in->tabs()->setCurrentIndex(2), capture("inspector_attention"));
  in->tabs()->setCurrentIndex(0);
  for (QDockWidget* d : hidden) d->show();
  if (!shot) return;
  w.show_view(MainWindow::View::Chat);
  ui::ChatView* chat = w.chat_view();
  // A scratch store: screenshots must not add conversations to the user's own list.
  chat->set_store(ui::ConversationStore(QDir(dir_).filePath("conversations")));
  chat->new_chat();
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  greedy.max_tokens = 60;
  chat->sampling()->set_params(greedy);
  chat->input()->setPlainText("Once upon a time, there was a dog named Max.");
  chat->send();
  if (!wait_for([chat] { return !chat->is_generating(); }, 120)) return fail("the chat reply did not finish");
  on_chat_done();
}

namespace {

// A saved conversation whose reply shows what the chat renders (the model that wrote it is not
// one the screenshots can run): reasoning, a heading, a list, a table, code and a link.
ui::Conversation markdown_example() {
  ui::Conversation c = ui::Conversation::make_new();
  c.title = "Markdown and thinking";
  c.format = "qwen3";
  c.append({"user", "How do I count the tokens of a prompt with llmwb? And how do templates mark turns?"});
  ui::MessageStats s;
  s.prompt_tokens = 31;
  s.output_tokens = 214;
  s.thinking_tokens = 58;
  s.stop_reason = "stop";
  s.config = "a hand-written example reply (no model ran), qwen3 template";
  c.append({"assistant",
            "<think>\nThe user wants token counts. The engine exposes encode(); chat prompts go through "
            "chat_prompt_ids so that control tokens come only from the template. Then a short table.\n</think>\n\n"
            "## Counting prompt tokens\n\n"
            "Use **`chat_prompt_ids`** for a conversation, or `Engine::encode` for plain text:\n\n"
            "1. Render the conversation with its chat template\n"
            "2. Tokenize the segments: markers become control tokens, messages stay text\n"
            "3. Compare with the context length before sending\n\n"
            "```cpp\nconst RenderedChat chat = render_chat(t, messages, options);\n"
            "const std::vector<int> ids = chat_prompt_ids(engine, chat);\n"
            "std::printf(\"%zu tokens\\n\", ids.size());\n```\n\n"
            "| Template | A turn starts with | A turn ends with |\n|---|---|---|\n"
            "| ChatML, Qwen | `<|im_start|>role` | `<|im_end|>` |\n"
            "| Llama 3 | `<|start_header_id|>role<|end_header_id|>` | `<|eot_id|>` |\n"
            "| Llama 2 | `[INST]` | `[/INST]` |\n\n"
            "See [docs/CHAT_TEMPLATES.md](https://example.com/docs) for the templates."},
           s);
  return c;
}

}  // namespace

void ScreenshotMode::on_chat_done() {
  MainWindow& w = bench_.window();
  ui::ChatView* chat = w.chat_view();
  // Regenerate with sampling: the first reply stays as a branch (‹ 2/2 ›).
  SamplingParams sampled = chat->sampling()->params();
  sampled.temperature = 1.0f;
  sampled.seed = 3;
  chat->sampling()->set_params(sampled);
  chat->regenerate();
  if (!wait_for([chat] { return !chat->is_generating(); }, 120)) return fail("the regenerated reply did not finish");
  chat->input()->setPlainText("What did Max find?");
  wait_for([chat] { return chat->context_prompt_tokens() > 0; }, 5);
  if (!capture("chat")) return;
  const ui::Conversation example = markdown_example();
  try {
    chat->store().save(example);
  } catch (const std::exception& e) {
    return fail(QString::fromUtf8(e.what()));
  }
  chat->input()->clear();
  chat->open_conversation(example.id);
  chat->toggle_thinking(1);
  // The reply whole: the bottom docks out of the way for this picture.
  const MainWindow::View docks[] = {MainWindow::View::Throughput, MainWindow::View::KvCache,
                                    MainWindow::View::Attention, MainWindow::View::Timeline};
  for (MainWindow::View v : docks) w.view_widget(v)->parentWidget()->hide();
  wait_for([] { return false; }, 0.1);
  chat->transcript()->verticalScrollBar()->setValue(0);  // the question, then the answer
  if (!capture("chat_markdown")) return;
  for (MainWindow::View v : docks) w.show_view(v);
  w.show_view(MainWindow::View::Throughput);
  w.show_view(MainWindow::View::Models);
  w.model_library()->set_folder(QFileInfo(model_).absolutePath() + "/..", false);
  if (!capture("model_library")) return;
  w.show_view(MainWindow::View::Server);
  if (!capture("server")) return;
  w.show_view(MainWindow::View::Experiments);
  ui::ExperimentsView* x = w.experiments_view();
  ui::Experiment e;
  e.name = "F32 vs INT8 vs INT4";
  e.prompts = QStringList{"Once upon a time", "The little dog was"};
  e.max_tokens = 40;
  e.temperature = 0.0f;
  e.accuracy = true;
  e.configs = {ui::ExperimentConfig::named("F32 (stored)"), ui::ExperimentConfig::named("INT8"),
               ui::ExperimentConfig::named("INT4 g32")};
  e.configs[1].quantize = "int8";
  e.configs[2].quantize = "int4-g32";
  x->set_experiment(e);
  x->run();
  if (!wait_for([x] { return !x->is_running(); }, 180)) return fail("the experiment did not finish");
  on_experiment_done();
}

void ScreenshotMode::on_experiment_done() {
  if (!capture("experiments")) return;
  MainWindow& w = bench_.window();
  w.show_view(MainWindow::View::Quantization);
  ui::QuantView* q = w.quant_view();
  q->set_scheme("int4-g32");
  q->run();
  if (!wait_for([q] { return !q->is_running(); }, 180)) return fail("the quantization report did not finish");
  if (!q->report()) return fail("the quantization report failed");
  if (!capture("quantization")) return;
  start_speculative_chat();
}

void ScreenshotMode::start_speculative_chat() {
  MainWindow& w = bench_.window();
  const ui::AppSettings before = w.settings();
  ui::AppSettings s = before;
  s.speculative = "self-int4";
  // A fixed k, so that the picture shows accepted guesses: adaptively, this tiny model's INT4
  // draft (a pass costs more than the F32 target's) is switched off by cost after a few rounds.
  s.spec_k = 4;
  w.set_settings(s);
  connect(&w, &MainWindow::model_ready, this, &ScreenshotMode::on_speculative_model_ready, Qt::SingleShotConnection);
  const bool opening = w.open_model(model_, tokenizer_);
  // The engine took its configuration as the model began to open: the settings as they were
  // come back at once, so that the pictures leave the user's speculation setting alone.
  w.set_settings(before);
  if (!opening) fail(model_ + ": cannot open again with speculative decoding");
}

void ScreenshotMode::on_speculative_model_ready() {
  MainWindow& w = bench_.window();
  w.show_view(MainWindow::View::Chat);
  w.show_view(MainWindow::View::Timeline);
  ui::ChatView* chat = w.chat_view();
  chat->new_chat();
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  greedy.max_tokens = 120;
  chat->sampling()->set_params(greedy);
  chat->input()->setPlainText("Once upon a time, there was a dog named Max.");
  chat->send();
  if (!wait_for([chat] { return !chat->is_generating(); }, 120)) return fail("the speculative chat reply did not finish");
  if (chat->conversation().stats_at(1).draft_tokens == 0) return fail("no draft token was accepted in the speculative chat");
  if (!capture("chat_speculative")) return;
  capture_parallelism();
}

void ScreenshotMode::capture_parallelism() {
  MainWindow& w = bench_.window();
  try {
    check_parallel_layout(w.model_info(), 2, 2);
  } catch (const Error& e) {
    // Another model than the stories260K the screenshots are made of: no such picture.
    QTextStream(stderr) << "llmwb --screenshot-dir: no parallelism.png: " << e.what() << "\n";
    return finish();
  }
  ui::AppSettings parallel = w.settings();
  parallel.tensor_parallel_size = 2;
  parallel.pipeline_parallel_size = 2;
  connect(&w, &MainWindow::model_ready, this, &ScreenshotMode::on_parallel_model_ready, Qt::SingleShotConnection);
  w.set_settings(parallel, false);   // reopens the model with 4 ranks, as the Settings dialog's OK does
}

void ScreenshotMode::on_parallel_model_ready() {
  MainWindow& w = bench_.window();
  w.show_view(MainWindow::View::Parallelism);
  w.show_view(MainWindow::View::Completion);
  ui::CompletionView* c = w.completion_view();
  c->prompt_editor()->setPlainText("Once upon a time");
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  greedy.max_tokens = 48;
  c->sampling()->set_params(greedy);
  c->generate();
  if (!wait_for([c] { return !c->is_generating(); }, 120)) return fail("the TP 2 x PP 2 generation did not finish");
  if (c->last_finish_reason() == FinishReason::Error) return fail("the TP 2 x PP 2 generation failed");
  if (w.parallelism_view()->steps_held() == 0) return fail("the Parallelism view received no per-rank telemetry");
  if (!capture("parallelism")) return;
  capture_settings();
}

// The Settings dialog over the window, with speculation on so that its rows are all live.
void ScreenshotMode::capture_settings() {
  MainWindow& w = bench_.window();
  ui::AppSettings s = w.settings();
  s.speculative = "self-int4";
  ui::SettingsDialog dialog(s, &w);
  dialog.set_model(w.model_info());
  dialog.show();
  wait_for([] { return false; }, 0.25);
  const QString path = QDir(dir_).filePath("settings.png");
  if (!dialog.grab().save(path)) return fail(path + ": cannot write the PNG");
  written_ << path;
  dialog.reject();
  finish();
}

void ScreenshotMode::finish() {
  QTextStream(stdout) << "wrote " << written_.size() << " screenshots to " << dir_ << "\n";
  QApplication::exit(0);
}

void ScreenshotMode::fail(const QString& why) {
  QTextStream(stderr) << "llmwb --screenshot-dir: " << why << "\n";
  QApplication::exit(1);
}

}  // namespace llmwb::gui
