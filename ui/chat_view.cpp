#include "chat_view.h"

#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSaveFile>
#include <QScrollBar>
#include <QSplitter>
#include <QTextBrowser>
#include <QTextDocument>
#include <QVBoxLayout>

#include "sampling_params_editor.h"

namespace llmwb::ui {

ChatView::ChatView(QWidget* parent)
    : QWidget(parent),
      list_(new QListWidget(this)),
      format_(new QComboBox(this)),
      thinking_(new QCheckBox(tr("Enable thinking"), this)),
      template_label_(new QLabel(this)),
      system_(new QLineEdit(this)),
      transcript_(new QTextBrowser(this)),
      input_(new QPlainTextEdit(this)),
      send_(new QPushButton(tr("Send"), this)),
      stop_(new QPushButton(tr("Stop"), this)),
      regenerate_(new QPushButton(tr("Regenerate"), this)),
      edit_(new QPushButton(tr("Edit last"), this)),
      sampling_(new SamplingParamsEditor(this)),
      status_(new QLabel(this)),
      unreadable_label_(new QLabel(this)) {
  list_->setObjectName("conversation_list");
  format_->setObjectName("chat_format");
  thinking_->setObjectName("enable_thinking");
  thinking_->setChecked(true);
  thinking_->setToolTip(tr("Qwen3: let the model reason in a <think> block before it answers "
                           "(off: the template closes an empty think block)"));
  template_label_->setObjectName("chat_template_label");
  template_label_->setWordWrap(true);
  system_->setObjectName("system_prompt");
  system_->setPlaceholderText(tr("System prompt (optional)"));
  transcript_->setObjectName("transcript");
  transcript_->setOpenLinks(false);
  input_->setObjectName("chat_input");
  input_->setPlaceholderText(tr("Message (Ctrl+Return to send)"));
  input_->setMaximumHeight(110);
  send_->setObjectName("send");
  stop_->setObjectName("chat_stop");
  regenerate_->setObjectName("regenerate");
  edit_->setObjectName("edit_last");

  format_->addItem(tr("Auto"), "auto");
  for (ChatFormat f : all_chat_formats()) format_->addItem(chat_format_name(f), chat_format_name(f));

  auto* new_chat = new QPushButton(tr("New chat"), this);
  new_chat->setToolTip(tr("New chat (Ctrl+N)"));
  auto* remove = new QPushButton(tr("Delete"), this);
  auto* left = new QWidget(this);
  auto* left_layout = new QVBoxLayout(left);
  left_layout->setContentsMargins(0, 0, 0, 0);
  auto* left_buttons = new QHBoxLayout;
  left_buttons->addWidget(new_chat);
  left_buttons->addWidget(remove);
  left_layout->addLayout(left_buttons);
  left_layout->addWidget(list_);
  unreadable_label_->setObjectName("unreadable_conversations");
  unreadable_label_->setWordWrap(true);
  unreadable_label_->hide();
  left_layout->addWidget(unreadable_label_);

  auto* center = new QWidget(this);
  auto* center_layout = new QVBoxLayout(center);
  center_layout->setContentsMargins(0, 0, 0, 0);
  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("Template"), this));
  top->addWidget(format_);
  top->addWidget(thinking_);
  top->addWidget(system_, 1);
  center_layout->addLayout(top);
  center_layout->addWidget(template_label_);
  center_layout->addWidget(transcript_, 1);
  center_layout->addWidget(input_);
  auto* buttons = new QHBoxLayout;
  auto* copy = new QPushButton(tr("Copy"), this);
  copy->setToolTip(tr("Copy the conversation as Markdown"));
  auto* export_md = new QPushButton(tr("Export…"), this);
  export_md->setToolTip(tr("Export the conversation as a Markdown file"));
  buttons->addWidget(send_);
  buttons->addWidget(stop_);
  buttons->addWidget(regenerate_);
  buttons->addWidget(edit_);
  buttons->addStretch(1);
  buttons->addWidget(status_);
  buttons->addWidget(copy);
  buttons->addWidget(export_md);
  center_layout->addLayout(buttons);

  auto* params_box = new QGroupBox(tr("Sampling"), this);
  (new QVBoxLayout(params_box))->addWidget(sampling_);
  auto* right = new QWidget(this);
  auto* right_layout = new QVBoxLayout(right);
  right_layout->setContentsMargins(0, 0, 0, 0);
  right_layout->addWidget(params_box);
  right_layout->addStretch(1);

  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(left);
  split->addWidget(center);
  split->addWidget(right);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 4);
  split->setStretchFactor(2, 1);
  split->setSizes({220, 700, 220});
  list_->setTextElideMode(Qt::ElideRight);
  list_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  (new QVBoxLayout(this))->addWidget(split);

  connect(send_, &QPushButton::clicked, this, &ChatView::send);
  connect(stop_, &QPushButton::clicked, this, &ChatView::stop);
  connect(regenerate_, &QPushButton::clicked, this, &ChatView::regenerate);
  connect(edit_, &QPushButton::clicked, this, &ChatView::edit_last);
  connect(new_chat, &QPushButton::clicked, this, &ChatView::new_chat);
  connect(copy, &QPushButton::clicked, this, &ChatView::copy_markdown);
  connect(export_md, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export conversation"),
                                                      conversation_.derived_title() + ".md", tr("Markdown (*.md)"));
    if (!path.isEmpty()) export_markdown(path);
  });
  connect(remove, &QPushButton::clicked, this, [this] {
    if (ticket_ != 0) return;
    store_.remove(conversation_.id);
    this->new_chat();
  });
  connect(list_, &QListWidget::itemActivated, this,
          [this](QListWidgetItem* item) { open_conversation(item->data(Qt::UserRole).toString()); });
  connect(list_, &QListWidget::itemClicked, this,
          [this](QListWidgetItem* item) { open_conversation(item->data(Qt::UserRole).toString()); });
  connect(format_, &QComboBox::currentIndexChanged, this, [this] {
    conversation_.format = format_->currentData().toString();
    update_template_info();
  });
  connect(system_, &QLineEdit::editingFinished, this, [this] { conversation_.system_prompt = system_->text(); });

  sampling_->restore("chat/sampling");
  conversation_ = Conversation::make_new();
  restore_newest();
  reload_list();
  render();
  update_buttons();
  update_template_info();
}

void ChatView::restore_newest() {
  if (!conversation_.messages.empty() || ticket_ != 0) return;
  const std::vector<Conversation> saved = store_.load_all();
  if (!saved.empty()) open_conversation(saved.front().id);
}

void ChatView::set_store(const ConversationStore& store) {
  store_ = store;
  if (ticket_ == 0 && conversation_.messages.empty()) conversation_ = Conversation::make_new();
  restore_newest();
  reload_list();
  render();
  update_buttons();
}

void ChatView::set_model(bool ready, const ChatTemplate& detected, const QString& model_name) {
  ready_ = ready;
  detected_ = detected;
  format_->setItemText(0, tr("Auto (%1)").arg(chat_format_name(detected.format)));
  status_->setText(ready ? model_name : tr("no model"));
  update_buttons();
  update_template_info();
}

ChatTemplate ChatView::effective_template() const {
  ChatFormat f = ChatFormat::Completion;
  if (conversation_.format != "auto" && chat_format_from_name(conversation_.format.toStdString(), &f))
    return chat_template_for(f);
  return detected_;
}

ChatFormat ChatView::effective_format() const { return effective_template().format; }

void ChatView::update_template_info() {
  const ChatTemplate t = effective_template();
  const bool chosen = conversation_.format != "auto";
  QString text = tr("Template: %1").arg(QString::fromStdString(t.description));
  if (chosen) text = tr("Template: %1 (chosen here, not the model's)").arg(chat_format_name(t.format));
  else if (!ready_) text = tr("Template: no model loaded");
  template_label_->setText(text);
  // An unrecognised template is worth the user's attention: the model sees no turn markers.
  template_label_->setStyleSheet(!chosen && !t.recognized ? "color: #b35900;" : QString());
  thinking_->setVisible(chat_supports_thinking(t.format));
}

QString ChatView::transcript_text() const { return transcript_->toPlainText(); }

void ChatView::update_buttons() {
  const bool idle = ticket_ == 0;
  send_->setEnabled(ready_ && idle);
  stop_->setEnabled(!idle);
  regenerate_->setEnabled(ready_ && idle && !conversation_.messages.empty());
  edit_->setEnabled(idle && !conversation_.messages.empty());
  format_->setEnabled(idle);
}

void ChatView::send() {
  if (!ready_ || ticket_ != 0) return;
  const QString text = input_->toPlainText();
  if (text.trimmed().isEmpty()) return;
  conversation_.system_prompt = system_->text();
  conversation_.messages.push_back({"user", text.toStdString()});
  if (conversation_.title.isEmpty()) conversation_.title = conversation_.derived_title();
  input_->clear();
  persist();
  start_reply();
}

void ChatView::start_reply() {
  const ChatTemplate t = effective_template();
  ChatOptions options;
  options.add_generation_prompt = true;
  if (chat_supports_thinking(t.format)) options.enable_thinking = thinking_->isChecked();
  GenerationRequest r;
  r.ticket = next_ticket();
  try {
    // The worker tokenizes the segments: control tokens only where the template put markers.
    r.chat = render_chat(t, conversation_.template_messages(), options);
  } catch (const std::exception& e) {
    last_error_ = QString::fromStdString(e.what());
    emit error(tr("Chat: %1").arg(last_error_));
    return;
  }
  r.prompt = r.chat->text();
  r.chat_format = t.format;
  r.params = sampling_->params();  // the worker adds the format's stop strings
  last_prompt_text_ = r.prompt;
  last_prompt_ids_.clear();
  sampling_->save("chat/sampling");
  ticket_ = r.ticket;
  streaming_.clear();
  last_error_.clear();
  render();
  update_buttons();
  emit generate_requested(r);
}

void ChatView::stop() {
  if (ticket_ != 0) emit abort_requested(ticket_);
}

void ChatView::regenerate() {
  if (!ready_ || ticket_ != 0 || conversation_.messages.empty()) return;
  if (conversation_.messages.back().role == "assistant") conversation_.messages.pop_back();
  if (conversation_.messages.empty()) return;
  start_reply();
}

void ChatView::edit_last() {
  if (ticket_ != 0) return;
  // Back to before the last user turn; its text returns to the input box for editing.
  for (int i = int(conversation_.messages.size()) - 1; i >= 0; --i) {
    if (conversation_.messages[size_t(i)].role != "user") continue;
    input_->setPlainText(QString::fromStdString(conversation_.messages[size_t(i)].content));
    conversation_.messages.resize(size_t(i));
    break;
  }
  render();
  update_buttons();
  input_->setFocus();
}

void ChatView::new_chat() {
  if (ticket_ != 0) stop();
  ticket_ = 0;
  conversation_ = Conversation::make_new();
  conversation_.system_prompt = system_->text();
  format_->setCurrentIndex(0);
  input_->clear();
  render();
  reload_list();
  update_buttons();
}

void ChatView::open_conversation(const QString& id) {
  if (ticket_ != 0 || id == conversation_.id) return;
  try {
    conversation_ = store_.load(id);
  } catch (const std::exception& e) {
    last_error_ = QString::fromStdString(e.what());
    emit error(last_error_);
    return;
  }
  system_->setText(conversation_.system_prompt);
  const int index = format_->findData(conversation_.format);
  format_->blockSignals(true);
  format_->setCurrentIndex(index >= 0 ? index : 0);
  format_->blockSignals(false);
  render();
  update_buttons();
  update_template_info();
}

void ChatView::on_delta(const TokenDelta& d) {
  if (d.ticket != ticket_ || ticket_ == 0) return;
  const QString piece = QString::fromStdString(d.text);
  streaming_ += piece;
  if (!d.finished) {
    // Re-rendering the whole conversation per delta re-parsed and re-laid out every message
    // many times a second; the new text goes at the end of the reply instead.
    if (streaming_shown_) append_streamed(streaming_.size() == piece.size() ? shown_reply(piece) : piece);
    else render();
    return;
  }
  ticket_ = 0;
  if (!d.prompt_token_ids.empty()) last_prompt_ids_ = d.prompt_token_ids;
  if (d.finish_reason == FinishReason::Error) {
    last_error_ = QString::fromStdString(d.error);
    emit error(tr("Chat: %1").arg(last_error_));
  } else {
    // Stop strings are removed by the engine; the leading space a template leaves is not content.
    QString reply = QString::fromStdString(d.final_text);
    if (reply.startsWith(' ')) reply.remove(0, 1);
    conversation_.messages.push_back({"assistant", reply.toStdString()});
    persist();
  }
  streaming_.clear();
  render();
  update_buttons();
  emit reply_finished();
}

void ChatView::persist() {
  conversation_.updated = QDateTime::currentDateTimeUtc();
  try {
    store_.save(conversation_);
  } catch (const std::exception& e) {
    last_error_ = QString::fromStdString(e.what());
    emit error(tr("The conversation could not be saved: %1").arg(last_error_));
  }
  reload_list();
}

void ChatView::reload_list() {
  list_->blockSignals(true);
  list_->clear();
  QStringList errors;
  for (const Conversation& c : store_.load_all(&errors)) {
    auto* item = new QListWidgetItem(c.title.isEmpty() ? c.derived_title() : c.title, list_);
    item->setData(Qt::UserRole, c.id);
    item->setToolTip(c.updated.toLocalTime().toString());
    if (c.id == conversation_.id) list_->setCurrentItem(item);
  }
  list_->blockSignals(false);
  show_unreadable(errors);
}

void ChatView::show_unreadable(const QStringList& errors) {
  if (errors == unreadable_) return;
  unreadable_ = errors;
  unreadable_label_->setVisible(!errors.isEmpty());
  if (errors.isEmpty()) return;
  unreadable_label_->setText(tr("%n saved conversation(s) could not be read and are not listed (the files are "
                                "left untouched):", nullptr, int(errors.size())) +
                             "\n" + QString(errors.join("\n")).replace(store_.dir() + "/", QString()));
  unreadable_label_->setToolTip(errors.join("\n"));
  // Queued: at construction nothing is connected yet; the window's banner gets it afterwards.
  const QString message = tr("Saved conversations that could not be read (left untouched): %1").arg(errors.join("; "));
  QMetaObject::invokeMethod(this, [this, message] { emit error(message); }, Qt::QueuedConnection);
}

void ChatView::render() {
  const QColor user_bg = palette().color(QPalette::AlternateBase);
  QString html;
  auto block = [&](const QString& who, const QString& text, bool user) {
    html += QString("<div style='margin:6px 0;padding:6px;%1'><b>%2</b><br/>%3</div>")
                .arg(user ? QString("background:%1;").arg(user_bg.name()) : QString(), who,
                     text.toHtmlEscaped().replace("\n", "<br/>"));
  };
  if (!conversation_.system_prompt.isEmpty())
    html += QString("<p><i>%1</i></p>").arg(tr("System: %1").arg(conversation_.system_prompt.toHtmlEscaped()));
  for (const auto& m : conversation_.messages)
    block(m.role == "user" ? tr("You") : tr("Assistant"), QString::fromStdString(m.content), m.role == "user");
  if (ticket_ != 0) block(tr("Assistant"), shown_reply(streaming_) + "▍", false);
  streaming_shown_ = ticket_ != 0;
  const bool at_end = transcript_->verticalScrollBar()->value() >= transcript_->verticalScrollBar()->maximum() - 4;
  transcript_->setHtml(html);
  if (at_end) transcript_->verticalScrollBar()->setValue(transcript_->verticalScrollBar()->maximum());
}

QString ChatView::shown_reply(QString reply) {
  // The leading space a template leaves is not content (the saved reply drops it too).
  if (reply.startsWith(' ')) reply.remove(0, 1);
  return reply;
}

void ChatView::append_streamed(const QString& piece) {
  if (piece.isEmpty()) return;
  QScrollBar* bar = transcript_->verticalScrollBar();
  const bool at_end = bar->value() >= bar->maximum() - 4;
  QTextDocument* doc = transcript_->document();
  QTextCursor c = doc->find(QStringLiteral("▍"), doc->characterCount(), QTextDocument::FindBackward);
  if (c.isNull()) return render();
  const QTextCharFormat format = c.charFormat();  // the reply's text format, not the bold name
  c.setPosition(c.selectionStart());
  // A newline is a line break inside the reply's block, as render() writes it (<br/>).
  QString text = piece;
  text.replace('\n', QChar::LineSeparator);
  c.insertText(text, format);
  if (at_end) bar->setValue(bar->maximum());
}

void ChatView::copy_markdown() const { QApplication::clipboard()->setText(conversation_.to_markdown()); }

bool ChatView::export_markdown(const QString& path) {
  QSaveFile f(path);
  if (f.open(QIODevice::WriteOnly)) {
    f.write(conversation_.to_markdown().toUtf8());
    if (f.commit()) return true;
  }
  last_error_ = tr("%1: cannot write: %2").arg(path, f.errorString());
  emit error(last_error_);
  return false;
}

}  // namespace llmwb::ui
