#include "smoke_mode.h"
#include "wait_for_events.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QPixmap>
#include <QPlainTextEdit>
#include <QTextStream>
#include <QThread>
#include <QTimer>

#include <utility>

#include "completion_view.h"
#include "sampling_params_editor.h"

namespace llmwb::gui {

using ui::MainWindow;

namespace {

// Every view of the main window, with the name a failure gives. A view added to
// MainWindow::View belongs here too.
constexpr std::pair<MainWindow::View, const char*> kViews[] = {
    {MainWindow::View::Chat, "Chat"},           {MainWindow::View::Completion, "Completion"},
    {MainWindow::View::Experiments, "Experiments"}, {MainWindow::View::Quantization, "Quantization"},
    {MainWindow::View::Throughput, "Throughput"}, {MainWindow::View::KvCache, "KV cache"},
    {MainWindow::View::Attention, "Attention"},   {MainWindow::View::Timeline, "Timeline"},
    {MainWindow::View::ModelInfo, "Model info"},  {MainWindow::View::Models, "Models"},
    {MainWindow::View::Server, "Server"},       {MainWindow::View::Parallelism, "Parallelism"},
};

constexpr double kLoadSeconds = 120;
constexpr double kGenerateSeconds = 60;
constexpr int kTokens = 16;

}  // namespace

SmokeMode::SmokeMode(Workbench& bench, QString model, QString tokenizer)
    : bench_(bench), model_(std::move(model)), tokenizer_(std::move(tokenizer)) {}

void SmokeMode::start() {
  MainWindow& w = bench_.window();
  w.resize(1280, 800);
  w.show();
  connect(&w, &MainWindow::model_ready, this, &SmokeMode::on_model_ready, Qt::SingleShotConnection);
  connect(&bench_.worker(), &EngineWorker::load_failed, this,
          [this](quint64, const QString& error, bool) { fail("cannot open the model " + model_ + ": " + error); });
  QTimer::singleShot(static_cast<int>(kLoadSeconds * 1000), this, [this] {
    if (!bench_.window().is_model_loaded()) fail("the model " + model_ + " did not load within 120 s");
  });
  if (!w.open_model(model_, tokenizer_)) fail(model_ + ": cannot be opened as a model");
}

bool SmokeMode::wait_for(const std::function<bool()>& done, double seconds) {
  return wait_for_events(done, seconds);
}

void SmokeMode::on_model_ready() {
  MainWindow& w = bench_.window();
  // A few greedy tokens first, so that the live views below draw real data.
  w.show_view(MainWindow::View::Completion);
  ui::CompletionView* c = w.completion_view();
  c->prompt_editor()->setPlainText("Once upon a time");
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  greedy.max_tokens = kTokens;
  c->sampling()->set_params(greedy);
  c->generate();
  if (!wait_for([c] { return !c->is_generating(); }, kGenerateSeconds))
    return fail("the generation did not finish within 60 s");
  if (c->last_finish_reason() == FinishReason::Error) return fail("the generation failed");
  if (c->generated_tokens() < 1) return fail("the generation produced no tokens");
  if (!render_every_view()) return;
  finished_ = true;
  QTextStream(stdout) << "llmwb --smoke-test: ok: " << model_ << " loaded, " << c->generated_tokens()
                      << " tokens generated, " << std::size(kViews) << " views rendered\n";
  QApplication::exit(0);
}

bool SmokeMode::render_every_view() {
  MainWindow& w = bench_.window();
  for (const auto& [view, name] : kViews) {
    w.show_view(view);
    wait_for([] { return false; }, 0.05);  // layouts settle, queued replots run
    QWidget* widget = w.view_widget(view);
    if (!widget || !widget->isVisible()) {
      fail(QString("the %1 view is not shown").arg(name));
      return false;
    }
    const QPixmap picture = widget->grab();
    if (picture.isNull() || picture.width() < 1 || picture.height() < 1) {
      fail(QString("the %1 view did not render").arg(name));
      return false;
    }
  }
  return true;
}

void SmokeMode::fail(const QString& why) {
  if (finished_) return;
  finished_ = true;
  QTextStream(stderr) << "llmwb --smoke-test: error: " << why << "\n";
  QApplication::exit(1);
}

}  // namespace llmwb::gui
