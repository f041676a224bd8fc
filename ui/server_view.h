// server_view.h — the Server panel: start and stop the OpenAI-compatible server that serves the
// loaded model (host, port, API key), the address it listens on, and a live list of its
// requests (state, prompt and completion tokens, time to first token, tokens/s). A widget
// only: app/gui's ServerController runs the server and feeds the list.
#pragma once

#include <QString>
#include <QVector>
#include <QWidget>

class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace llmwb::ui {

// One row of the request list.
struct ServerRequestRow {
  quint64 serial = 0;
  QString endpoint;
  QString state;
  qint64 prompt_tokens = 0, completion_tokens = 0;
  double ttft_seconds = -1;    // -1: no token yet
  double tokens_per_second = 0;
};

class ServerView : public QWidget {
  Q_OBJECT

 public:
  explicit ServerView(QWidget* parent = nullptr);

  QLineEdit* host_edit() const { return host_; }
  QSpinBox* port_edit() const { return port_; }
  QLineEdit* api_key_edit() const { return key_; }
  QPushButton* start_button() const { return start_; }
  QPushButton* stop_button() const { return stop_; }
  QTableWidget* request_table() const { return table_; }
  QString address() const { return address_text_; }

  // A model is loaded: Start is possible.
  void set_model_ready(bool ready);

 public slots:
  void set_running(const QString& address);
  void set_stopped(const QString& error = {});
  void set_rows(const QVector<llmwb::ui::ServerRequestRow>& rows);

 signals:
  void start_requested(const QString& host, int port, const QString& api_key);
  void stop_requested();

 private:
  void update_buttons();

  QLineEdit* host_;
  QSpinBox* port_;
  QLineEdit* key_;
  QPushButton* start_;
  QPushButton* stop_;
  QLabel* address_;
  QLabel* summary_;
  QTableWidget* table_;
  QString address_text_;
  bool running_ = false, model_ready_ = false;
};

}  // namespace llmwb::ui
