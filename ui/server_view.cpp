#include "server_view.h"

#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

namespace llmwb::ui {

ServerView::ServerView(QWidget* parent)
    : QWidget(parent),
      host_(new QLineEdit("127.0.0.1", this)),
      port_(new QSpinBox(this)),
      key_(new QLineEdit(this)),
      start_(new QPushButton(tr("Start"), this)),
      stop_(new QPushButton(tr("Stop"), this)),
      address_(new QLabel(this)),
      summary_(new QLabel(this)),
      table_(new QTableWidget(0, 7, this)) {
  setObjectName("server_view");
  port_->setRange(0, 65535);
  port_->setValue(8080);
  port_->setToolTip(tr("0: any free port"));
  key_->setEchoMode(QLineEdit::Password);
  key_->setPlaceholderText(tr("none: no authentication"));
  host_->setToolTip(tr("127.0.0.1 serves this machine only"));
  auto* form = new QFormLayout;
  form->addRow(tr("Host"), host_);
  form->addRow(tr("Port"), port_);
  form->addRow(tr("API key"), key_);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(start_);
  buttons->addWidget(stop_);
  buttons->addStretch(1);
  address_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  table_->setHorizontalHeaderLabels({tr("#"), tr("Endpoint"), tr("State"), tr("Prompt tok"), tr("Completion tok"),
                                     tr("TTFT ms"), tr("tok/s")});
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->verticalHeader()->hide();
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addLayout(buttons);
  layout->addWidget(address_);
  layout->addWidget(summary_);
  layout->addWidget(table_, 1);
  connect(start_, &QPushButton::clicked, this,
          [this] { emit start_requested(host_->text().trimmed(), port_->value(), key_->text()); });
  connect(stop_, &QPushButton::clicked, this, &ServerView::stop_requested);
  set_stopped();
}

void ServerView::set_model_ready(bool ready) {
  model_ready_ = ready;
  update_buttons();
}

void ServerView::update_buttons() {
  start_->setEnabled(!running_ && model_ready_);
  stop_->setEnabled(running_);
  host_->setEnabled(!running_);
  port_->setEnabled(!running_);
  key_->setEnabled(!running_);
}

void ServerView::set_running(const QString& address) {
  running_ = true;
  address_text_ = address;
  address_->setText(tr("Serving the loaded model at <b>%1/v1</b> (OpenAI API; docs/SERVER.md)").arg(address.toHtmlEscaped()));
  update_buttons();
}

void ServerView::set_stopped(const QString& error) {
  running_ = false;
  address_text_.clear();
  address_->setText(error.isEmpty() ? tr("Stopped.") : tr("Stopped: %1").arg(error));
  update_buttons();
}

void ServerView::set_rows(const QVector<ServerRequestRow>& rows) {
  int running = 0;
  for (const auto& r : rows) running += r.state == "running" || r.state == "queued";
  summary_->setText(tr("%1 requests shown, %2 in flight").arg(rows.size()).arg(running));
  table_->setRowCount(int(rows.size()));
  // Newest first.
  for (int i = 0; i < int(rows.size()); ++i) {
    const ServerRequestRow& r = rows[rows.size() - 1 - i];
    const QStringList cells = {QString::number(r.serial),
                               r.endpoint,
                               r.state,
                               QString::number(r.prompt_tokens),
                               QString::number(r.completion_tokens),
                               r.ttft_seconds < 0 ? QStringLiteral("–") : QString::number(r.ttft_seconds * 1e3, 'f', 1),
                               r.tokens_per_second > 0 ? QString::number(r.tokens_per_second, 'f', 1) : QStringLiteral("–")};
    for (int c = 0; c < cells.size(); ++c) {
      QTableWidgetItem* item = table_->item(i, c);
      if (!item) table_->setItem(i, c, item = new QTableWidgetItem);
      item->setText(cells[c]);
    }
  }
}

}  // namespace llmwb::ui
