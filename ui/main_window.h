// main_window.h — the application window: chat, completion, experiments and quantization in tabs, the
// live profiling views (throughput, KV cache, attention, timeline, parallelism) and the model info in docks.
//
// The window talks to the engine only through signals (requests out) and slots (results in);
// app/ connects them to the EngineWorker across threads, so nothing here can block on a
// forward pass.
#pragma once

#include <QElapsedTimer>
#include <QMainWindow>
#include <QStringList>

#include "app_settings.h"
#include "meta_types.h"

class QAction;
class QDockWidget;
class QLabel;
class QMenu;
class QProgressBar;
class QTabWidget;
class QToolButton;

namespace llmwb::ui {

class AttentionHeatmap;
class ChatView;
class CompletionView;
class ExperimentsView;
class KvBlockMap;
class MessageBanner;
class ModelLibrary;
class ModelInfoPanel;
class ParallelismView;
class QuantView;
class ServerView;
class ThroughputChart;
class TimelineView;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  enum class View { Chat, Completion, Experiments, Quantization, Throughput, KvCache, Attention, Timeline, ModelInfo, Models, Server, Parallelism };

  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Opens a model: a GGUF file, a Hugging Face folder (config.json + safetensors) or a
  // llama2.c .bin (its tokenizer found beside it unless given). The file dialogs call this;
  // tests call it directly. Returns false (and shows why) when the path cannot be a model.
  bool open_model(const QString& path, const QString& tokenizer = {});
  // Raises a tab or dock (screenshot mode, menu).
  void show_view(View view);
  QWidget* view_widget(View view) const;

  bool is_loading() const { return loading_; }
  bool is_model_loaded() const { return loaded_; }
  const ModelInfo& model_info() const { return info_; }
  const QStringList& vocabulary() const { return vocabulary_; }
  const AppSettings& settings() const { return settings_; }
  // Applies `settings` (reopening the model when an engine setting changed) and, if `persist`,
  // saves them as the user's (the screenshot mode's temporary choices are not).
  void set_settings(const AppSettings& settings, bool persist = true);

  CompletionView* completion_view() const { return completion_; }
  ChatView* chat_view() const { return chat_; }
  ExperimentsView* experiments_view() const { return experiments_; }
  QuantView* quant_view() const { return quant_; }
  ServerView* server_view() const { return server_; }
  ThroughputChart* throughput_chart() const { return throughput_; }
  KvBlockMap* kv_map() const { return kv_; }
  AttentionHeatmap* attention_heatmap() const { return attention_; }
  TimelineView* timeline_view() const { return timeline_; }
  ParallelismView* parallelism_view() const { return parallelism_; }
  ModelInfoPanel* model_info_panel() const { return info_panel_; }
  MessageBanner* banner() const { return banner_; }
  ModelLibrary* model_library() const { return library_; }

 public slots:
  void on_load_progress(double fraction, const QString& what);
  // Results of loads other than the latest one asked for are ignored.
  void on_model_loaded(quint64 ticket, const llmwb::ModelInfo& info, const QStringList& vocabulary,
                       const llmwb::EngineConfig& config);
  void on_load_failed(quint64 ticket, const QString& error, bool cancelled);
  void on_tokens(const llmwb::ui::TokenDelta& delta);
  void on_telemetry(const llmwb::ui::TelemetryFrame& frame);
  void show_error(const QString& message);
  void cancel_load();

 signals:
  void load_requested(const llmwb::EngineConfig& config, quint64 ticket);
  void cancel_load_requested(quint64 ticket);
  void unload_requested();
  void generate_requested(const llmwb::ui::GenerationRequest& request);
  void abort_requested(quint64 ticket);
  void attention_capture_requested(bool on, int layer, int max_queries);
  void step_delay_requested(int milliseconds);
  void experiment_requested(const llmwb::ui::Experiment& experiment);
  void cancel_experiment_requested();
  void quant_report_requested(const llmwb::QuantReportOptions& options);
  void cancel_quant_report_requested();
  void model_ready();

 protected:
  void closeEvent(QCloseEvent* event) override;
  // A model file or folder dropped onto the window opens it.
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void build_menus();
  QDockWidget* add_dock(const QString& title, const QString& name, QWidget* widget, Qt::DockWidgetArea area);
  void refresh_recent_menu();
  void open_model_dialog();
  void open_folder_dialog();
  // The Settings dialog, the loaded model's shape given for its checks.
  void open_settings();
  void send_current();
  void stop_current();

  AppSettings settings_;
  ModelInfo info_;
  QStringList vocabulary_;
  bool loading_ = false;
  quint64 load_ticket_ = 0;
  quint64 cancelled_ticket_ = 0;  // loads up to this one were cancelled by the user
  bool loaded_ = false;
  QString loading_path_;
  QString loading_tokenizer_;
  QElapsedTimer status_since_;

  MessageBanner* banner_;
  QTabWidget* tabs_;
  ChatView* chat_;
  CompletionView* completion_;
  ExperimentsView* experiments_;
  QuantView* quant_;
  ServerView* server_;
  ModelLibrary* library_;
  ThroughputChart* throughput_;
  KvBlockMap* kv_;
  AttentionHeatmap* attention_;
  TimelineView* timeline_;
  ParallelismView* parallelism_;
  ModelInfoPanel* info_panel_;
  QDockWidget* throughput_dock_;
  QDockWidget* kv_dock_;
  QDockWidget* attention_dock_;
  QDockWidget* timeline_dock_;
  QDockWidget* parallelism_dock_;
  QDockWidget* info_dock_;
  QMenu* recent_menu_ = nullptr;
  QLabel* status_model_;
  QLabel* status_rate_;
  QProgressBar* progress_;
  QToolButton* cancel_load_;
};

}  // namespace llmwb::ui
