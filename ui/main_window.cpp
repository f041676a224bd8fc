#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QMimeData>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QToolButton>
#include <QVBoxLayout>

#include "attention_heatmap.h"
#include "chat_view.h"
#include "completion_view.h"
#include "experiments_view.h"
#include "kv_block_map.h"
#include "llmwb/build_info.h"
#include "llmwb/chat_template.h"
#include "message_banner.h"
#include "model_defaults.h"
#include "model_info_panel.h"
#include "model_library.h"
#include "parallelism_view.h"
#include "quant_view.h"
#include "server_view.h"
#include "settings_dialog.h"
#include "theme.h"
#include "throughput_chart.h"
#include "timeline_view.h"

// Q_INIT_RESOURCE must name the resource outside any namespace; the .qrc lives in a static
// library, whose initializer the linker would otherwise drop.
static void init_llmwb_resources() { Q_INIT_RESOURCE(llmwb); }

namespace llmwb::ui {

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent),
      settings_(AppSettings::load()),
      banner_(new MessageBanner(this)),
      tabs_(new QTabWidget(this)),
      chat_(new ChatView(this)),
      completion_(new CompletionView(this)),
      experiments_(new ExperimentsView(this)),
      quant_(new QuantView(this)),
      server_(new ServerView(this)),
      library_(new ModelLibrary(this)),
      throughput_(new ThroughputChart(this)),
      kv_(new KvBlockMap(this)),
      attention_(new AttentionHeatmap(this)),
      timeline_(new TimelineView(this)),
      parallelism_(new ParallelismView(this)),
      info_panel_(new ModelInfoPanel(this)),
      status_model_(new QLabel(this)),
      status_rate_(new QLabel(this)),
      progress_(new QProgressBar(this)),
      cancel_load_(new QToolButton(this)) {
  init_llmwb_resources();
  setObjectName("main_window");
  setWindowTitle("LLM Workbench");
  setWindowIcon(QIcon(":/icons/llmwb.svg"));
  setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks);

  auto* central = new QWidget(this);
  auto* layout = new QVBoxLayout(central);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  layout->addWidget(banner_);
  layout->addWidget(tabs_, 1);
  setCentralWidget(central);
  tabs_->setDocumentMode(true);
  tabs_->addTab(chat_, tr("Chat"));
  tabs_->addTab(completion_, tr("Completion"));
  tabs_->addTab(experiments_, tr("Experiments"));
  tabs_->addTab(quant_, tr("Quantization"));
  tabs_->addTab(server_, tr("Server"));
  tabs_->addTab(library_, tr("Models"));
  connect(library_, &ModelLibrary::open_requested, this, [this](const QString& path) { open_model(path); });
  setAcceptDrops(true);

  info_dock_ = add_dock(tr("Model"), "dock_model", info_panel_, Qt::RightDockWidgetArea);
  throughput_dock_ = add_dock(tr("Throughput"), "dock_throughput", throughput_, Qt::BottomDockWidgetArea);
  kv_dock_ = add_dock(tr("KV cache"), "dock_kv", kv_, Qt::BottomDockWidgetArea);
  attention_dock_ = add_dock(tr("Attention"), "dock_attention", attention_, Qt::BottomDockWidgetArea);
  timeline_dock_ = add_dock(tr("Timeline"), "dock_timeline", timeline_, Qt::BottomDockWidgetArea);
  parallelism_dock_ = add_dock(tr("Parallelism"), "dock_parallelism", parallelism_, Qt::BottomDockWidgetArea);
  tabifyDockWidget(throughput_dock_, kv_dock_);
  tabifyDockWidget(kv_dock_, attention_dock_);
  tabifyDockWidget(attention_dock_, timeline_dock_);
  tabifyDockWidget(timeline_dock_, parallelism_dock_);
  throughput_dock_->raise();
  resizeDocks({throughput_dock_}, {380}, Qt::Vertical);
  resizeDocks({info_dock_}, {290}, Qt::Horizontal);

  progress_->setRange(0, 1000);
  progress_->setMaximumWidth(220);
  progress_->setTextVisible(true);
  progress_->hide();
  cancel_load_->setText(tr("Cancel"));
  cancel_load_->setObjectName("cancel_load");
  cancel_load_->hide();
  statusBar()->addWidget(status_model_, 1);
  statusBar()->addPermanentWidget(status_rate_);
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancel_load_);
  status_model_->setText(tr("No model loaded — File ▸ Open Model…"));
  connect(cancel_load_, &QToolButton::clicked, this, &MainWindow::cancel_load);

  connect(completion_, &CompletionView::generate_requested, this, &MainWindow::generate_requested);
  connect(completion_, &CompletionView::abort_requested, this, &MainWindow::abort_requested);
  connect(chat_, &ChatView::generate_requested, this, &MainWindow::generate_requested);
  connect(chat_, &ChatView::abort_requested, this, &MainWindow::abort_requested);
  connect(chat_, &ChatView::error, this, &MainWindow::show_error);
  connect(experiments_, &ExperimentsView::run_requested, this, &MainWindow::experiment_requested);
  connect(experiments_, &ExperimentsView::cancel_requested, this, &MainWindow::cancel_experiment_requested);
  connect(experiments_, &ExperimentsView::error, this, &MainWindow::show_error);
  connect(quant_, &QuantView::run_requested, this, &MainWindow::quant_report_requested);
  connect(quant_, &QuantView::cancel_requested, this, &MainWindow::cancel_quant_report_requested);
  connect(attention_, &AttentionHeatmap::capture_changed, this, &MainWindow::attention_capture_requested);
  connect(parallelism_, &ParallelismView::settings_requested, this, &MainWindow::open_settings);
  experiments_->load_presets(":/presets/experiments.json");

  build_menus();
  QSettings s;
  resize(1440, 920);
  restoreGeometry(s.value("window/geometry").toByteArray());
  restoreState(s.value("window/state").toByteArray());
  tabs_->setCurrentIndex(s.value("window/tab", 1).toInt());
  apply_theme(settings_.theme);
}

MainWindow::~MainWindow() = default;

QDockWidget* MainWindow::add_dock(const QString& title, const QString& name, QWidget* widget, Qt::DockWidgetArea area) {
  auto* dock = new QDockWidget(title, this);
  dock->setObjectName(name);  // saveState() keys docks by object name
  dock->setWidget(widget);
  addDockWidget(area, dock);
  return dock;
}

void MainWindow::build_menus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* open = file->addAction(tr("&Open Model File…"), this, &MainWindow::open_model_dialog);
  open->setShortcut(QKeySequence::Open);
  file->addAction(tr("Open Model &Folder…"), this, &MainWindow::open_folder_dialog);
  recent_menu_ = file->addMenu(tr("&Recent Models"));
  refresh_recent_menu();
  file->addSeparator();
  file->addAction(tr("&Settings…"), this, &MainWindow::open_settings)->setShortcut(QKeySequence::Preferences);
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);

  QMenu* gen = menuBar()->addMenu(tr("&Generate"));
  QAction* send = gen->addAction(tr("&Send / Generate"), this, &MainWindow::send_current);
  send->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_Return), QKeySequence(Qt::CTRL | Qt::Key_Enter)});
  send->setShortcutContext(Qt::ApplicationShortcut);
  QAction* stop = gen->addAction(tr("S&top"), this, &MainWindow::stop_current);
  stop->setShortcut(QKeySequence(Qt::Key_Escape));
  stop->setShortcutContext(Qt::ApplicationShortcut);
  QAction* new_chat = gen->addAction(tr("&New Chat"), this, [this] {
    tabs_->setCurrentWidget(chat_);
    chat_->new_chat();
  });
  new_chat->setShortcut(QKeySequence::New);
  QAction* focus_input = gen->addAction(tr("Go to the Chat &Input"), this, [this] {
    tabs_->setCurrentWidget(chat_);
    chat_->focus_input();
  });
  focus_input->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_L));
  focus_input->setShortcutContext(Qt::ApplicationShortcut);
  QAction* library = gen->addAction(tr("&Model Library"), this, [this] { show_view(View::Models); });
  library->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));

  QMenu* view = menuBar()->addMenu(tr("&View"));
  for (QDockWidget* d : {info_dock_, throughput_dock_, kv_dock_, attention_dock_, timeline_dock_, parallelism_dock_})
    view->addAction(d->toggleViewAction());

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About"), this, [this] {
    QMessageBox::about(this, tr("About LLM Workbench"),
                       tr("<b>LLM Workbench</b><br/>Run local language models and watch the engine work: "
                          "throughput, KV cache blocks, attention, the step timeline and what parallel ranks cost.") +
                           "<pre>" + QString::fromStdString(build_info_text()).toHtmlEscaped() + "</pre>");
  });
}

void MainWindow::refresh_recent_menu() {
  recent_menu_->clear();
  for (const QString& path : AppSettings::recent_models())
    recent_menu_->addAction(path, this, [this, path] { open_model(path); });
  recent_menu_->setEnabled(!recent_menu_->isEmpty());
}

void MainWindow::open_model_dialog() {
  auto* dialog = new QFileDialog(this, tr("Open model"), QString(),
                                 tr("Models (*.gguf *.bin *.safetensors);;All files (*)"));
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  dialog->setFileMode(QFileDialog::ExistingFile);
  connect(dialog, &QFileDialog::fileSelected, this, [this](const QString& path) {
    // A .safetensors file stands for its Hugging Face folder.
    open_model(path.endsWith(".safetensors") ? QFileInfo(path).absolutePath() : path);
  });
  dialog->open();
}

void MainWindow::open_folder_dialog() {
  auto* dialog = new QFileDialog(this, tr("Open Hugging Face model folder"));
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  dialog->setFileMode(QFileDialog::Directory);
  dialog->setOption(QFileDialog::ShowDirsOnly);
  connect(dialog, &QFileDialog::fileSelected, this, [this](const QString& path) { open_model(path); });
  dialog->open();
}

namespace {
// llama2.c checkpoints carry no tokenizer: look beside the file, as run.c's users do.
QString find_tokenizer_beside(const QString& model) {
  const QDir dir = QFileInfo(model).absoluteDir();
  for (const QStringList& patterns : {QStringList{"tokenizer.bin"}, QStringList{"tok*.bin"},
                                      QStringList{"tokenizer.model"}, QStringList{"*.model"}}) {
    for (const QString& name : dir.entryList(patterns, QDir::Files, QDir::Name))
      if (dir.absoluteFilePath(name) != QFileInfo(model).absoluteFilePath()) return dir.absoluteFilePath(name);
  }
  return {};
}
}  // namespace

bool MainWindow::open_model(const QString& path, const QString& tokenizer_in) {
  const QFileInfo fi(path);
  if (!fi.exists()) {
    show_error(tr("%1: no such file or folder").arg(path));
    return false;
  }
  if (fi.isDir() && !QFileInfo::exists(fi.absoluteFilePath() + "/config.json")) {
    show_error(tr("%1: not a Hugging Face model folder (no config.json)").arg(path));
    return false;
  }
  QString tokenizer = tokenizer_in;
  if (tokenizer.isEmpty() && fi.isFile() && fi.suffix() == "bin") {
    tokenizer = find_tokenizer_beside(path);
    if (tokenizer.isEmpty())
      tokenizer = QFileDialog::getOpenFileName(this, tr("Tokenizer for %1").arg(fi.fileName()), fi.absolutePath(),
                                               tr("Tokenizers (*.bin *.model)"));
    if (tokenizer.isEmpty()) {
      show_error(tr("%1: a llama2.c checkpoint needs a tokenizer (tokenizer.bin or a .model file)").arg(path));
      return false;
    }
  }
  loading_ = true;
  loaded_ = false;
  loading_path_ = fi.absoluteFilePath();
  loading_tokenizer_ = tokenizer;
  banner_->hide();
  completion_->set_model_ready(false);
  chat_->set_model(false, ChatTemplate{}, {});
  experiments_->set_model_ready(false);
  quant_->set_model_ready(false);
  server_->set_model_ready(false);
  kv_->clear();
  throughput_->clear();
  timeline_->clear();
  parallelism_->reset();
  info_panel_->clear();
  status_model_->setText(tr("Opening %1…").arg(fi.fileName()));
  progress_->setValue(0);
  progress_->show();
  cancel_load_->show();
  emit step_delay_requested(settings_.step_delay_ms);
  EngineConfig config = settings_.engine_config(loading_path_, tokenizer);
  // The context length last chosen for this model, if one was.
  if (const int n = model_defaults::context_length(loading_path_); n > 0) config.max_model_len = n;
  emit load_requested(config, ++load_ticket_);
  return true;
}

void MainWindow::cancel_load() {
  if (!loading_) return;
  cancelled_ticket_ = load_ticket_;
  emit cancel_load_requested(load_ticket_);
}

void MainWindow::on_load_progress(double fraction, const QString& what) {
  if (!loading_) return;
  progress_->setValue(int(fraction * 1000));
  progress_->setFormat(QString("%1 %p%").arg(what.left(24)));
}

void MainWindow::on_model_loaded(quint64 ticket, const ModelInfo& info, const QStringList& vocabulary,
                                 const EngineConfig& config) {
  if (ticket != load_ticket_) return;
  if (ticket <= cancelled_ticket_) {
    // The load had finished before the worker saw the cancel: the user still said no.
    emit unload_requested();
    on_load_failed(ticket, tr("loading cancelled"), true);
    return;
  }
  loading_ = false;
  loaded_ = true;
  info_ = info;
  vocabulary_ = vocabulary;
  progress_->hide();
  cancel_load_->hide();
  const ChatTemplate chat_template = recognize_chat_template(info.chat_template, info.name);
  info_panel_->set_info(info, chat_format_name(chat_template.format));
  const QString name = QString::fromStdString(info.name.empty() ? QFileInfo(loading_path_).fileName().toStdString() : info.name);
  status_model_->setText(tr("%1 — %2, %3 parameters, %4").arg(name, QString::fromStdString(info.format),
                                                             human_count(double(info.n_params)),
                                                             QString::fromStdString(info.dtype_summary)));
  setWindowTitle(tr("%1 — LLM Workbench").arg(name));
  completion_->set_vocabulary(vocabulary);
  completion_->set_model_ready(true);
  chat_->set_model(true, chat_template, name);
  chat_->set_model_details(info);
  experiments_->set_vocabulary(vocabulary);
  experiments_->set_model_ready(true);
  quant_->set_model_ready(true);
  server_->set_model_ready(true);
  attention_->set_model(info.n_layers, info.n_heads, vocabulary);
  parallelism_->set_layout(config.tensor_parallel_size, config.pipeline_parallel_size, info);
  AppSettings::add_recent_model(loading_path_);
  refresh_recent_menu();
  emit model_ready();
}

void MainWindow::on_load_failed(quint64 ticket, const QString& error, bool cancelled) {
  if (ticket != load_ticket_) return;
  loading_ = false;
  loaded_ = false;
  progress_->hide();
  cancel_load_->hide();
  status_model_->setText(cancelled ? tr("Opening cancelled — no model loaded") : tr("No model loaded"));
  if (cancelled) banner_->show_message(MessageBanner::Kind::Info, tr("Opening %1 was cancelled.").arg(loading_path_));
  else show_error(tr("Could not open the model: %1").arg(error));
}

void MainWindow::on_tokens(const TokenDelta& delta) {
  completion_->on_delta(delta);
  chat_->on_delta(delta);
  if (!delta.finished && delta.time_to_first_token > 0 && delta.num_output_tokens > 0 &&
      delta.num_output_tokens == int(delta.token_ids.size()))
    throughput_->set_request_latency(delta.time_to_first_token, -1.0);  // the first delta
  if (delta.finished && delta.num_output_tokens > 0) {
    const double tpot = delta.num_output_tokens > 1
                            ? (delta.total_time - delta.time_to_first_token) / (delta.num_output_tokens - 1)
                            : 0.0;
    throughput_->set_request_latency(delta.time_to_first_token, tpot);
  }
}

void MainWindow::on_telemetry(const TelemetryFrame& frame) {
  throughput_->add_frame(frame);
  kv_->add_frame(frame);
  timeline_->add_frame(frame);
  parallelism_->add_frame(frame);
  if (frame.latest && frame.latest->attention) attention_->set_snapshot(frame.latest->attention);
  // The status line is read, not watched: four updates a second are plenty.
  if (frame.latest && (!status_since_.isValid() || status_since_.elapsed() > 250)) {
    status_since_.start();
    status_rate_->setText(tr("%1 tok/s · KV %2/%3 blocks")
                              .arg(throughput_->last_decode_rate(), 0, 'f', 0)
                              .arg(frame.latest->blocks_used)
                              .arg(frame.latest->blocks_total));
  }
}

void MainWindow::show_error(const QString& message) { banner_->show_message(MessageBanner::Kind::Error, message); }

void MainWindow::set_settings(const AppSettings& s, bool persist) {
  const bool engine_changed = s.threads != settings_.threads || s.block_size != settings_.block_size ||
                              s.max_num_seqs != settings_.max_num_seqs ||
                              s.max_num_batched_tokens != settings_.max_num_batched_tokens ||
                              s.max_model_len != settings_.max_model_len || s.kv_memory_mib != settings_.kv_memory_mib ||
                              s.enable_prefix_caching != settings_.enable_prefix_caching ||
                              s.tensor_parallel_size != settings_.tensor_parallel_size ||
                              s.pipeline_parallel_size != settings_.pipeline_parallel_size;
  // A context length chosen while a model is loaded is that model's from now on.
  if (persist && loaded_ && s.max_model_len != settings_.max_model_len)
    model_defaults::set_context_length(loading_path_, s.max_model_len);
  settings_ = s;
  if (persist) settings_.save();
  apply_theme(settings_.theme);
  emit step_delay_requested(settings_.step_delay_ms);
  // A new engine configuration takes effect by reopening the model with it.
  if (engine_changed && loaded_) open_model(loading_path_, loading_tokenizer_);
}

void MainWindow::open_settings() {
  SettingsDialog dialog(settings_, this);
  if (loaded_) dialog.set_model(info_);
  if (dialog.exec() == QDialog::Accepted) set_settings(dialog.settings());
}

void MainWindow::send_current() {
  if (tabs_->currentWidget() == chat_) chat_->send();
  else if (tabs_->currentWidget() == completion_) completion_->generate();
  else if (tabs_->currentWidget() == experiments_) experiments_->run();
  else if (tabs_->currentWidget() == quant_) quant_->run();
}

void MainWindow::stop_current() {
  chat_->stop();
  completion_->stop();
  experiments_->cancel();
  quant_->cancel();
}

QWidget* MainWindow::view_widget(View view) const {
  switch (view) {
    case View::Chat: return chat_;
    case View::Completion: return completion_;
    case View::Experiments: return experiments_;
    case View::Quantization: return quant_;
    case View::Throughput: return throughput_;
    case View::KvCache: return kv_;
    case View::Attention: return attention_;
    case View::Timeline: return timeline_;
    case View::ModelInfo: return info_panel_;
    case View::Models: return library_;
    case View::Server: return server_;
    case View::Parallelism: return parallelism_;
  }
  return nullptr;
}

void MainWindow::show_view(View view) {
  switch (view) {
    case View::Chat:
    case View::Completion:
    case View::Quantization:
    case View::Experiments:
    case View::Models:
    case View::Server: tabs_->setCurrentWidget(view_widget(view)); break;
    case View::Throughput: throughput_dock_->show(); throughput_dock_->raise(); break;
    case View::KvCache: kv_dock_->show(); kv_dock_->raise(); break;
    case View::Attention: attention_dock_->show(); attention_dock_->raise(); break;
    case View::Timeline: timeline_dock_->show(); timeline_dock_->raise(); break;
    case View::ModelInfo: info_dock_->show(); info_dock_->raise(); break;
    case View::Parallelism: parallelism_dock_->show(); parallelism_dock_->raise(); break;
  }
}

namespace {
// The one local file or folder a drag carries, or nothing.
QString dropped_path(const QMimeData* mime) {
  if (!mime || !mime->hasUrls() || mime->urls().size() != 1 || !mime->urls().front().isLocalFile()) return {};
  return mime->urls().front().toLocalFile();
}
}  // namespace

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (!dropped_path(event->mimeData()).isEmpty()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  const QString path = dropped_path(event->mimeData());
  if (path.isEmpty()) return;
  event->acceptProposedAction();
  // A .safetensors file stands for its Hugging Face folder.
  open_model(path.endsWith(".safetensors") ? QFileInfo(path).absolutePath() : path);
}

void MainWindow::closeEvent(QCloseEvent* event) {
  QSettings s;
  s.setValue("window/geometry", saveGeometry());
  s.setValue("window/state", saveState());
  s.setValue("window/tab", tabs_->currentIndex());
  stop_current();
  QMainWindow::closeEvent(event);
}

}  // namespace llmwb::ui
