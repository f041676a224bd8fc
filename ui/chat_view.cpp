#include "chat_view.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDesktopServices>
#include <QEvent>
#include <QFileDialog>
#include <QFontDatabase>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSaveFile>
#include <QScrollBar>
#include <QSettings>
#include <QSplitter>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextDocument>
#include <QTimer>
#include <QUrl>
#include <QVBoxLayout>

#include "app_settings.h"
#include "frame_pacer.h"
#include "model_defaults.h"
#include "sampling_params_editor.h"

namespace llmwb::ui {

namespace {
// The streaming reply is written again at most every 33 ms and within 5 % of the GUI
// thread's time (a rewrite that costs more is made less often).
constexpr double kStreamBudget = 0.05;
constexpr int kStreamIntervalMs = 33;
constexpr int kCountDebounceMs = 250;
}  // namespace

ChatView::ChatView(QWidget* parent)
    : QWidget(parent),
      search_(new QLineEdit(this)),
      list_(new QListWidget(this)),
      format_(new QComboBox(this)),
      thinking_(new QCheckBox(tr("Enable thinking"), this)),
      show_drafts_(new QCheckBox(tr("Show accepted draft tokens"), this)),
      template_label_(new QLabel(this)),
      system_(new QLineEdit(this)),
      transcript_(new QTextBrowser(this)),
      input_(new QPlainTextEdit(this)),
      send_(new QPushButton(tr("Send"), this)),
      stop_(new QPushButton(tr("Stop"), this)),
      hold_(new QPushButton(tr("Pause"), this)),
      step_(new QPushButton(tr("Step"), this)),
      regenerate_(new QPushButton(tr("Regenerate"), this)),
      edit_(new QPushButton(tr("Edit last"), this)),
      sampling_(new SamplingParamsEditor(this)),
      status_(new QLabel(this)),
      unreadable_label_(new QLabel(this)),
      context_bar_(new QProgressBar(this)),
      context_label_(new QLabel(this)),
      auto_truncate_(new QCheckBox(tr("Drop oldest turns when full"), this)),
      truncate_send_(new QPushButton(tr("Drop oldest turns and send"), this)),
      count_timer_(new QTimer(this)) {
  setObjectName("chat_view");
  stream_pacer_ = std::make_unique<FramePacer>(this, [this] { update_stream(); }, kStreamBudget, kStreamIntervalMs);
  system_->setPlaceholderText(tr("System prompt (optional)"));
  transcript_->setObjectName("transcript");
  transcript_->setOpenLinks(false);
  transcript_->setOpenExternalLinks(false);
  transcript_->setTextInteractionFlags(Qt::TextBrowserInteraction);
  connect(transcript_, &QTextBrowser::anchorClicked, this, &ChatView::on_link);
  input_->setObjectName("chat_input");
  input_->setPlaceholderText(tr("Message (Ctrl+Enter to send, Ctrl+L to come back here)"));
  input_->setMaximumHeight(110);
  send_->setObjectName("send");
  stop_->setObjectName("chat_stop");
  regenerate_->setObjectName("regenerate");
  edit_->setObjectName("edit_last");
  search_->setObjectName("chat_search");
  search_->setPlaceholderText(tr("Search chats (Ctrl+F)"));
  search_->setClearButtonEnabled(true);
  list_->setObjectName("conversation_list");
  thinking_->setObjectName("enable_thinking");
  thinking_->setChecked(QSettings().value("chat/enable_thinking", true).toBool());
  show_drafts_->setObjectName("show_draft_tokens");
  show_drafts_->setToolTip(tr("With speculative decoding on (Settings), the text of the draft model's guesses that "
                              "the model accepted is shown on a blue background, as it streams and in saved replies"));
  show_drafts_->setChecked(AppSettings::show_draft_tokens());
  context_bar_->setObjectName("context_meter");
  context_bar_->setTextVisible(false);
  context_bar_->setMaximumHeight(8);
  context_bar_->setRange(0, 1);
  context_label_->setObjectName("context_label");
  auto_truncate_->setObjectName("auto_truncate");
  auto_truncate_->setToolTip(tr("When a message would not fit the context, leave the oldest turns out of the "
                                "prompt (the reply's footer says how many). Off: the chat asks first."));
  auto_truncate_->setChecked(QSettings().value("chat/auto_truncate", false).toBool());
  truncate_send_->setObjectName("truncate_and_send");
  truncate_send_->hide();
  count_timer_->setSingleShot(true);
  count_timer_->setInterval(kCountDebounceMs);

  format_->addItem(tr("Auto"), "auto");
  for (ChatFormat f : all_chat_formats()) format_->addItem(chat_format_name(f), chat_format_name(f));

  auto* new_chat = new QPushButton(tr("New chat"), this);
  new_chat->setToolTip(tr("New chat (Ctrl+N)"));
  auto* rename = new QPushButton(tr("Rename"), this);
  rename->setObjectName("rename_chat");
  rename->setToolTip(tr("Rename the chat (F2)"));
  auto* remove = new QPushButton(tr("Delete"), this);
  auto* left = new QWidget(this);
  auto* left_layout = new QVBoxLayout(left);
  left_layout->setContentsMargins(0, 0, 0, 0);
  auto* left_buttons = new QHBoxLayout;
  left_buttons->addWidget(new_chat);
  left_buttons->addWidget(rename);
  left_buttons->addWidget(remove);
  left_layout->addLayout(left_buttons);
  left_layout->addWidget(search_);
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
  top->addWidget(show_drafts_);
  center_layout->addLayout(top);
  center_layout->addWidget(template_label_);
  center_layout->addWidget(transcript_, 1);
  auto* meter = new QHBoxLayout;
  meter->addWidget(context_label_);
  meter->addWidget(context_bar_, 1);
  meter->addWidget(truncate_send_);
  meter->addWidget(auto_truncate_);
  center_layout->addLayout(meter);
  center_layout->addWidget(input_);
  auto* buttons = new QHBoxLayout;
  auto* copy = new QPushButton(tr("Copy"), this);
  copy->setToolTip(tr("Copy the conversation as Markdown"));
  auto* export_md = new QPushButton(tr("Export .md…"), this);
  export_md->setToolTip(tr("Export the conversation as a Markdown file"));
  auto* export_json = new QPushButton(tr("Export .json…"), this);
  export_json->setToolTip(tr("Export the conversation, with every branch, as a JSON file"));
  send_->setToolTip(tr("Send (Ctrl+Enter)"));
  stop_->setToolTip(tr("Stop (Esc)"));
  hold_->setObjectName("chat_pause");
  hold_->setToolTip(tr("Hold the reply after its current token (its KV cache stays); press again to resume"));
  step_->setObjectName("chat_step");
  step_->setToolTip(tr("While held: generate one more token"));
  connect(hold_, &QPushButton::clicked, this, &ChatView::toggle_pause);
  connect(step_, &QPushButton::clicked, this, &ChatView::step_one);
  regenerate_->setToolTip(tr("Regenerate the last reply; the previous one stays as a branch (Ctrl+R)"));
  edit_->setToolTip(tr("Edit the last message; sending it again makes a branch (Ctrl+E)"));
  buttons->addWidget(send_);
  buttons->addWidget(stop_);
  buttons->addWidget(hold_);
  buttons->addWidget(step_);
  buttons->addWidget(regenerate_);
  buttons->addWidget(edit_);
  buttons->addStretch(1);
  buttons->addWidget(status_);
  buttons->addWidget(copy);
  buttons->addWidget(export_md);
  buttons->addWidget(export_json);
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
  connect(truncate_send_, &QPushButton::clicked, this, &ChatView::truncate_and_send);
  connect(new_chat, &QPushButton::clicked, this, &ChatView::new_chat);
  connect(copy, &QPushButton::clicked, this, &ChatView::copy_markdown);
  connect(export_md, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export conversation"),
                                                      conversation_.derived_title() + ".md", tr("Markdown (*.md)"));
    if (!path.isEmpty()) export_markdown(path);
  });
  connect(export_json, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export conversation"),
                                                      conversation_.derived_title() + ".json", tr("JSON (*.json)"));
    if (!path.isEmpty()) this->export_json(path);
  });
  connect(rename, &QPushButton::clicked, this, [this] {
    bool ok = false;
    const QString current = conversation_.title.isEmpty() ? conversation_.derived_title() : conversation_.title;
    const QString title = QInputDialog::getText(this, tr("Rename chat"), tr("Title:"), QLineEdit::Normal, current, &ok);
    if (ok) rename_conversation(conversation_.id, title);
  });
  connect(remove, &QPushButton::clicked, this, [this] {
    if (ticket_ != 0) return;
    store_.remove(conversation_.id);
    this->new_chat();
    reload_list();
  });
  connect(search_, &QLineEdit::textChanged, this, [this] { reload_list(); });
  connect(list_, &QListWidget::itemActivated, this,
          [this](QListWidgetItem* item) { open_conversation(item->data(Qt::UserRole).toString()); });
  connect(list_, &QListWidget::itemClicked, this,
          [this](QListWidgetItem* item) { open_conversation(item->data(Qt::UserRole).toString()); });
  connect(format_, &QComboBox::currentIndexChanged, this, [this] {
    conversation_.format = format_->currentData().toString();
    // Written only when it changes: a QSettings write syncs the file under a lock.
    QSettings s;
    if (!model_key().isEmpty() && s.value(model_key() + "/format").toString() != conversation_.format)
      s.setValue(model_key() + "/format", conversation_.format);
    update_template_info();
    request_count();
  });
  connect(thinking_, &QCheckBox::toggled, this, [this](bool on) {
    QSettings().setValue("chat/enable_thinking", on);
    request_count();
  });
  connect(show_drafts_, &QCheckBox::toggled, this, [this](bool on) {
    AppSettings::set_show_draft_tokens(on);
    render();
  });
  connect(auto_truncate_, &QCheckBox::toggled, this, [this](bool on) {
    QSettings().setValue("chat/auto_truncate", on);
    update_meter();
  });
  connect(system_, &QLineEdit::editingFinished, this, [this] {
    conversation_.system_prompt = system_->text();
    request_count();
  });
  connect(input_, &QPlainTextEdit::textChanged, this, [this] {
    // The count is for another draft now: the meter says so until the new one arrives.
    count_ticket_ = 0;  // an answer still on its way is for the old draft
    if (!counts_.isEmpty()) {
      counts_.clear();
      update_meter();
    }
    count_timer_->start();
  });
  connect(count_timer_, &QTimer::timeout, this, &ChatView::request_count);
  build_actions();

  sampling_->restore("chat/sampling");
  conversation_ = Conversation::make_new();
  restore_newest();
  reload_list();
  render();
  update_buttons();
  update_template_info();
  update_meter();
}

ChatView::~ChatView() = default;

void ChatView::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) render();
}

void ChatView::build_actions() {
  // Shortcuts while the chat has focus (the window's Generate menu has Ctrl+Enter, Esc,
  // Ctrl+N and Ctrl+L application-wide).
  auto add = [this](const QString& text, const QKeySequence& key, auto slot) {
    auto* a = new QAction(text, this);
    a->setShortcut(key);
    a->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    connect(a, &QAction::triggered, this, slot);
    addAction(a);
    return a;
  };
  add(tr("Regenerate"), QKeySequence(Qt::CTRL | Qt::Key_R), [this] { regenerate(); });
  add(tr("Edit last message"), QKeySequence(Qt::CTRL | Qt::Key_E), [this] { edit_last(); });
  add(tr("Search chats"), QKeySequence::Find, [this] {
    search_->setFocus();
    search_->selectAll();
  });
  add(tr("Rename chat"), QKeySequence(Qt::Key_F2), [this] {
    bool ok = false;
    const QString title = QInputDialog::getText(this, tr("Rename chat"), tr("Title:"), QLineEdit::Normal,
                                                conversation_.title.isEmpty() ? conversation_.derived_title()
                                                                              : conversation_.title,
                                                &ok);
    if (ok) rename_conversation(conversation_.id, title);
  });
  add(tr("Previous branch of the last reply"), QKeySequence(Qt::ALT | Qt::Key_Left),
      [this] { switch_branch(int(conversation_.messages.size()) - 1, -1); });
  add(tr("Next branch of the last reply"), QKeySequence(Qt::ALT | Qt::Key_Right),
      [this] { switch_branch(int(conversation_.messages.size()) - 1, 1); });
  add(tr("Show or hide the last reply's thinking"), QKeySequence(Qt::CTRL | Qt::Key_T),
      [this] { toggle_thinking(int(conversation_.messages.size()) - 1); });
  add(tr("Copy the last code block"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C), [this] {
    if (!renderer_.code_blocks().isEmpty()) QApplication::clipboard()->setText(renderer_.code_blocks().back());
  });
  add(tr("Conversation list"), QKeySequence(Qt::CTRL | Qt::Key_K), [this] { list_->setFocus(); });
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
  if (!ready) {
    model_ = ModelInfo{};
    context_length_ = 0;
    counts_.clear();
  }
  update_buttons();
  update_template_info();
  update_meter();
  if (ready) request_count();
}

QString ChatView::model_key() const { return model_defaults::key(QString::fromStdString(model_.path)); }

void ChatView::set_model_details(const ModelInfo& info) {
  model_ = info;
  context_length_ = info.context_length;
  // The template and sampling last used with this model.
  QSettings s;
  const QString key = model_key();
  s.setValue(key + "/path", QString::fromStdString(info.path));
  sampling_->restore(key + "/sampling");
  if (conversation_.messages.empty() && s.contains(key + "/format")) {
    const int index = format_->findData(s.value(key + "/format").toString());
    if (index >= 0) format_->setCurrentIndex(index);
  }
  update_meter();
  request_count();
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

void ChatView::toggle_pause() {
  if (ticket_ == 0) return;
  if (paused_) emit resume_requested(ticket_);
  else emit pause_requested(ticket_);
}

void ChatView::step_one() {
  if (ticket_ != 0 && paused_) emit step_requested(ticket_);
}

void ChatView::on_paused(quint64 ticket, bool paused) {
  if (ticket != ticket_) return;
  paused_ = paused;
  update_buttons();
}

void ChatView::update_buttons() {
  const bool idle = ticket_ == 0;
  send_->setEnabled(ready_ && idle);
  stop_->setEnabled(!idle);
  hold_->setEnabled(!idle);
  hold_->setText(paused_ && !idle ? tr("Resume") : tr("Pause"));
  step_->setEnabled(!idle && paused_);
  regenerate_->setEnabled(ready_ && idle && !conversation_.messages.empty());
  edit_->setEnabled(idle && !conversation_.messages.empty());
  format_->setEnabled(idle);
}

// ---- Context meter -------------------------------------------------------------------

void ChatView::request_count() {
  count_timer_->stop();
  counts_.clear();
  variant_drops_.clear();
  if (!ready_) return update_meter();
  std::vector<ChatMessage> messages = conversation_.messages;
  const QString draft = input_->toPlainText();
  if (!draft.trimmed().isEmpty()) messages.push_back({"user", draft.toStdString()});
  const ChatTemplate t = effective_template();
  ChatOptions options;
  options.add_generation_prompt = true;
  if (chat_supports_thinking(t.format)) options.enable_thinking = thinking_->isChecked();
  TokenCountRequest r;
  r.ticket = next_ticket();
  // Variant k leaves out the oldest k turns (a user message and its reply), down to the
  // last user message alone.
  for (size_t drop = 0; drop < std::max<size_t>(messages.size(), 1) && r.variants.size() < 64; drop += 2) {
    if (drop > 0 && (drop >= messages.size() || messages[drop].role != "user")) break;
    Conversation part = conversation_;
    part.messages.assign(messages.begin() + std::ptrdiff_t(drop), messages.end());
    try {
      r.variants.push_back(render_chat(t, part.template_messages(), options));
    } catch (const std::exception&) {
      break;
    }
    variant_drops_.push_back(int(drop));
  }
  if (r.variants.empty()) return update_meter();
  count_ticket_ = r.ticket;
  update_meter();
  emit count_requested(r);
}

void ChatView::on_tokens_counted(quint64 ticket, const QList<int>& counts) {
  if (ticket != count_ticket_) return;
  counts_ = counts;
  update_meter();
}

int ChatView::messages_to_drop(bool* fits) const {
  *fits = true;
  if (counts_.isEmpty() || context_length_ <= 0) return 0;
  const int budget = sampling_->params().max_tokens;
  for (qsizetype v = 0; v < counts_.size() && v < qsizetype(variant_drops_.size()); ++v)
    if (counts_[v] + budget <= context_length_) return variant_drops_[size_t(v)];
  *fits = false;
  return -1;
}

void ChatView::update_meter() {
  if (!ready_ || context_length_ <= 0) {
    context_label_->setText(tr("Context: no model"));
    context_bar_->setRange(0, 1);
    context_bar_->setValue(0);
    truncate_send_->hide();
    return;
  }
  const int budget = sampling_->params().max_tokens;
  if (counts_.isEmpty()) {
    context_label_->setText(tr("Context: counting… of %1 tokens").arg(context_length_));
    truncate_send_->hide();
    return;
  }
  const int used = counts_.front() + budget;
  context_bar_->setRange(0, context_length_);
  context_bar_->setValue(std::min(used, context_length_));
  QString text = tr("Context: %1 prompt + %2 reply = %3 of %4 tokens")
                     .arg(counts_.front()).arg(budget).arg(used).arg(context_length_);
  bool fits = true;
  const int drop = messages_to_drop(&fits);
  const bool overflow = used > context_length_;
  if (overflow && !fits) text += tr(" — too long: even the last message alone does not fit");
  else if (overflow && auto_truncate_->isChecked())
    text += (drop / 2 == 1 ? tr(" — the oldest turn will be left out") : tr(" — the %1 oldest turns will be left out").arg(drop / 2));
  else if (overflow) text += (drop / 2 == 1 ? tr(" — too long: leave out the oldest turn?") : tr(" — too long: leave out the %1 oldest turns?").arg(drop / 2));
  context_label_->setText(text);
  context_label_->setStyleSheet(overflow ? "color: #c0392b;" : QString());
  truncate_send_->setVisible(overflow && fits && !auto_truncate_->isChecked() && drop > 0);
}

// ---- Turns ---------------------------------------------------------------------------

void ChatView::send() {
  if (!ready_ || ticket_ != 0) return;
  const QString text = input_->toPlainText();
  if (text.trimmed().isEmpty()) return;
  if (count_timer_->isActive()) request_count();  // not counted yet: the meter asks now
  bool fits = true;
  const int drop = messages_to_drop(&fits);
  if (!fits) {
    last_error_ = tr("The message does not fit the context (%1 tokens) even without the earlier turns: shorten "
                     "it or lower the reply's max tokens.").arg(context_length_);
    emit error(last_error_);
    return;
  }
  if (drop > 0 && !auto_truncate_->isChecked()) {
    // Never cut silently: the meter says so and offers "Drop oldest turns and send".
    update_meter();
    truncate_send_->setFocus();
    return;
  }
  conversation_.system_prompt = system_->text();
  conversation_.append({"user", text.toStdString()});
  if (conversation_.title.isEmpty()) conversation_.title = conversation_.derived_title();
  input_->blockSignals(true);
  input_->clear();
  input_->blockSignals(false);
  persist();
  start_reply(drop);
}

void ChatView::truncate_and_send() {
  const bool was = auto_truncate_->isChecked();
  auto_truncate_->blockSignals(true);
  auto_truncate_->setChecked(true);
  send();
  auto_truncate_->setChecked(was);
  auto_truncate_->blockSignals(false);
  update_meter();
}

QString ChatView::engine_description(const SamplingParams& p) const {
  QStringList parts;
  if (!status_->text().isEmpty()) parts << status_->text();
  if (!model_.backend.empty()) parts << QString::fromStdString(model_.backend);
  parts << chat_format_name(effective_format());
  QString sampling = p.temperature <= 0.0f ? tr("greedy") : tr("temp %1").arg(double(p.temperature), 0, 'g', 3);
  if (p.temperature > 0.0f && p.top_p < 1.0f) sampling += tr(", top-p %1").arg(double(p.top_p), 0, 'g', 3);
  if (p.temperature > 0.0f && p.top_k > 0) sampling += tr(", top-k %1").arg(p.top_k);
  if (p.temperature > 0.0f && p.min_p > 0.0f) sampling += tr(", min-p %1").arg(double(p.min_p), 0, 'g', 3);
  if (p.repetition_penalty != 1.0f) sampling += tr(", rep %1").arg(double(p.repetition_penalty), 0, 'g', 3);
  if (p.seed && p.temperature > 0.0f) sampling += tr(", seed %1").arg(*p.seed);
  sampling += tr(", max %1").arg(p.max_tokens);
  parts << sampling;
  if (context_length_ > 0) parts << tr("ctx %1").arg(context_length_);
  return parts.join(QStringLiteral(", "));
}

void ChatView::start_reply(int dropped_messages) {
  const ChatTemplate t = effective_template();
  ChatOptions options;
  options.add_generation_prompt = true;
  if (chat_supports_thinking(t.format)) options.enable_thinking = thinking_->isChecked();
  GenerationRequest r;
  r.ticket = next_ticket();
  Conversation sent = conversation_;
  dropped_messages = std::clamp(dropped_messages, 0, std::max(0, int(sent.messages.size()) - 1));
  sent.messages.erase(sent.messages.begin(), sent.messages.begin() + dropped_messages);
  try {
    // The worker tokenizes the segments: control tokens only where the template put markers.
    r.chat = render_chat(t, sent.template_messages(), options);
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
  if (!model_key().isEmpty()) sampling_->save(model_key() + "/sampling");
  running_config_ = engine_description(r.params);
  dropped_messages_ = dropped_messages;
  ticket_ = r.ticket;
  paused_ = false;
  streaming_.clear();
  stream_thinking_tokens_ = 0;
  stream_draft_spans_.clear();
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
  // The previous reply stays in the tree: the new one becomes its sibling (‹ 2/2 ›).
  if (conversation_.messages.back().role == "assistant") conversation_.truncate(conversation_.messages.size() - 1);
  if (conversation_.messages.empty()) return;
  start_reply();
}

void ChatView::edit_last() {
  if (ticket_ != 0) return;
  for (int i = int(conversation_.messages.size()) - 1; i >= 0; --i) {
    if (conversation_.messages[size_t(i)].role != "user") continue;
    edit_message(i);
    return;
  }
  render();
  update_buttons();
}

void ChatView::edit_message(int index) {
  if (ticket_ != 0 || index < 0 || index >= int(conversation_.messages.size())) return;
  if (conversation_.messages[size_t(index)].role != "user") return;
  // Back to before the message; its text returns to the input box, and sending it makes a
  // branch beside the original (which stays, with its replies).
  input_->setPlainText(QString::fromStdString(conversation_.messages[size_t(index)].content));
  conversation_.truncate(size_t(index));
  render();
  update_buttons();
  request_count();
  input_->setFocus();
}

void ChatView::switch_branch(int index, int step) {
  if (ticket_ != 0 || index < 0) return;
  const auto [at, count] = conversation_.branch_at(size_t(index));
  if (count < 2 || at + step < 0 || at + step >= count) return;
  conversation_.select_branch(size_t(index), at + step);
  persist();
  render();
  update_buttons();
  request_count();
}

void ChatView::toggle_thinking(int index) {
  if (index < 0) return;
  const int node = index < int(conversation_.path.size()) ? conversation_.path[size_t(index)] : -1;
  if (node < 0) return;
  if (!expanded_thinking_.erase(node)) expanded_thinking_.insert(node);
  render();
}

void ChatView::focus_input() {
  input_->setFocus(Qt::ShortcutFocusReason);
}

void ChatView::new_chat() {
  if (ticket_ != 0) stop();
  ticket_ = 0;
  paused_ = false;
  conversation_ = Conversation::make_new();
  conversation_.system_prompt = system_->text();
  int index = 0;
  if (!model_key().isEmpty()) index = std::max(0, format_->findData(QSettings().value(model_key() + "/format", "auto")));
  format_->setCurrentIndex(index);
  conversation_.format = format_->currentData().toString();
  expanded_thinking_.clear();
  input_->clear();
  render();
  list_->clearSelection();  // not saved (nor listed) until its first message
  update_buttons();
  request_count();
}

void ChatView::open_conversation(const QString& id) {
  if (ticket_ != 0 || id.isEmpty() || id == conversation_.id) return;
  try {
    conversation_ = store_.load(id);
  } catch (const std::exception& e) {
    last_error_ = QString::fromStdString(e.what());
    emit error(last_error_);
    return;
  }
  expanded_thinking_.clear();
  system_->setText(conversation_.system_prompt);
  const int index = format_->findData(conversation_.format);
  format_->blockSignals(true);
  format_->setCurrentIndex(index >= 0 ? index : 0);
  format_->blockSignals(false);
  render();
  update_buttons();
  update_template_info();
  request_count();
}

void ChatView::rename_conversation(const QString& id, const QString& title) {
  const QString t = title.simplified();
  if (t.isEmpty()) return;
  if (id == conversation_.id) {
    conversation_.title = t;
    persist();
    reload_list();  // a rename is rare: the list is read again, with any file found unreadable since
    return;
  }
  try {
    Conversation c = store_.load(id);
    c.title = t;
    store_.save(c);
  } catch (const std::exception& e) {
    last_error_ = QString::fromStdString(e.what());
    emit error(last_error_);
  }
  reload_list();
}

void ChatView::on_delta(const TokenDelta& d) {
  if (d.ticket != ticket_ || ticket_ == 0) return;
  const QString piece = QString::fromStdString(d.text);
  for (const auto& [start, end] : d.draft_spans) append_span(stream_draft_spans_, start, end);
  const bool thinking_before = split_thinking(streaming_).thinking_open || streaming_.trimmed().isEmpty();
  streaming_ += piece;
  const ReplyParts now = split_thinking(streaming_);
  if (now.has_thinking && thinking_before) {
    // Tokens of this delta up to "</think>" are thinking (by characters when it ends inside).
    const int n = int(d.token_ids.size());
    if (now.thinking_open) {
      stream_thinking_tokens_ += n;
    } else if (!piece.isEmpty()) {
      const qsizetype close = piece.indexOf(QStringLiteral("</think>"));
      const double share = close < 0 ? 0.0 : double(close + 8) / double(piece.size());
      stream_thinking_tokens_ += std::max(1, int(std::lround(n * share)));
    }
  }
  if (!d.finished) {
    // Only the streaming reply is written again, at most at the pacer's rate.
    stream_pacer_->request();
    return;
  }
  ticket_ = 0;
  paused_ = false;
  if (!d.prompt_token_ids.empty()) last_prompt_ids_ = d.prompt_token_ids;
  if (d.finish_reason == FinishReason::Error) {
    last_error_ = QString::fromStdString(d.error);
    emit error(tr("Chat: %1").arg(last_error_));
    conversation_.extend();  // a failed regenerate shows the previous reply again
  } else {
    // Stop strings are removed by the engine; the leading space a template leaves is not content.
    QString reply = QString::fromStdString(d.final_text);
    const int cut = reply.startsWith(' ') ? 1 : 0;
    reply.remove(0, cut);
    MessageStats stats;
    // The accepted draft tokens' text, where it is in the reply as kept.
    for (const auto& [start, end] : stream_draft_spans_)
      append_span(stats.draft_spans, std::max(0, start - cut), std::min(int(reply.size()), end - cut));
    stats.prompt_tokens = d.num_prompt_tokens;
    stats.output_tokens = d.num_output_tokens;
    stats.thinking_tokens = split_thinking(reply).has_thinking ? std::min(stream_thinking_tokens_, d.num_output_tokens) : 0;
    stats.ttft_s = d.time_to_first_token;
    stats.total_s = d.total_time;
    stats.stop_reason = QString::fromLatin1(to_string(d.finish_reason));
    stats.config = running_config_;
    stats.dropped_turns = dropped_messages_ / 2;
    stats.draft_tokens = int(d.speculative.accepted);
    stats.drafted_tokens = int(d.speculative.drafted);
    stats.mean_acceptance_length = d.speculative.mean_acceptance_length();
    conversation_.append({"assistant", reply.toStdString()}, stats);
    persist();
  }
  streaming_.clear();
  stream_draft_spans_.clear();
  render();
  update_buttons();
  request_count();
  emit reply_finished();
}

// ---- Drawing -------------------------------------------------------------------------

MessageRenderer::Style ChatView::render_style() const {
  MessageRenderer::Style s;
  const QPalette p = palette();
  s.text = p.color(QPalette::Text);
  s.muted = p.color(QPalette::PlaceholderText);
  s.link = p.color(QPalette::Link);
  s.user_background = p.color(QPalette::AlternateBase);
  const bool dark = p.color(QPalette::Base).lightness() < 128;
  s.code_background = dark ? p.color(QPalette::Base).lighter(130) : QColor("#f5f6f8");
  s.code_border = dark ? p.color(QPalette::Base).lighter(170) : QColor("#dfe2e6");
  // The Completion view's draft colour (TokenChipsView::kDraftColor) as a tint of the page.
  const QColor base = p.color(QPalette::Base), blue(0x1e, 0x88, 0xe5);
  const double tint = dark ? 0.45 : 0.22;
  s.draft_background = QColor::fromRgbF(float(base.redF() + (blue.redF() - base.redF()) * tint),
                                        float(base.greenF() + (blue.greenF() - base.greenF()) * tint),
                                        float(base.blueF() + (blue.blueF() - base.blueF()) * tint));
  s.base = transcript_->font();
  s.mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  s.mono.setPointSizeF(s.base.pointSizeF() * 0.95);
  return s;
}

MessageRenderer::Marks ChatView::marks_for(const TextSpans& spans) const {
  if (!show_drafts_->isChecked() || spans.empty()) return {};
  return {&spans, 0};
}

void ChatView::render() {
  QScrollBar* bar = transcript_->verticalScrollBar();
  const bool at_end = bar->value() >= bar->maximum() - 4;
  renderer_ = MessageRenderer(render_style());
  QTextDocument* doc = transcript_->document();
  doc->setUndoRedoEnabled(false);
  doc->clear();
  QTextCursor c(doc);
  if (!conversation_.system_prompt.isEmpty()) renderer_.write_note(c, tr("System: %1").arg(conversation_.system_prompt));
  for (size_t i = 0; i < conversation_.messages.size(); ++i) {
    const ChatMessage& m = conversation_.messages[i];
    const bool user = m.role == "user";
    const QString text = QString::fromStdString(m.content);
    // The links stay while a reply streams (what is on screen then is the start of what stands
    // there after); edit and branch switches are refused until it ends.
    renderer_.write_header(c, user ? tr("You") : tr("Assistant"), int(i), conversation_.branch_at(i), user, true);
    if (user) {
      renderer_.write_user_text(c, text);
      continue;
    }
    const MessageStats& s = conversation_.stats_at(i);
    const int node = i < conversation_.path.size() ? conversation_.path[i] : -1;
    renderer_.write_reply(c, text, int(i), s.thinking_tokens, expanded_thinking_.count(node) > 0, false,
                          marks_for(s.draft_spans));
    if (!s.empty()) renderer_.write_footer(c, s.footer());
  }
  stream_start_ = -1;
  if (ticket_ != 0) {
    renderer_.write_header(c, tr("Assistant"), int(conversation_.messages.size()), {0, 1}, false, false);
    c.insertBlock();
    stream_start_ = c.position();
    stream_code_start_ = renderer_.code_blocks().size();
    stream_kept_pos_ = -1;
    renderer_.write_reply(c, streaming_, int(conversation_.messages.size()), stream_thinking_tokens_, false, true,
                          marks_for(stream_draft_spans_));
  }
  if (at_end) bar->setValue(bar->maximum());
}

double ChatView::stream_rewrite_ms() const { return stream_pacer_->total_cost_ms(); }

void ChatView::update_stream() {
  if (ticket_ == 0) return;
  if (stream_start_ < 0) return render();
  ++stream_rewrites_;
  QScrollBar* bar = transcript_->verticalScrollBar();
  const bool at_end = bar->value() >= bar->maximum() - 4;
  QTextDocument* doc = transcript_->document();
  QTextCursor c(doc);
  // Everything after `from` goes; what is before it stays as laid out.
  auto cut_from = [&](int from) {
    c.setPosition(std::min(from, doc->characterCount() - 1));
    c.movePosition(QTextCursor::End, QTextCursor::KeepAnchor);
    c.removeSelectedText();
  };
  // Ends what is kept with an empty block, where the rewritten part begins: cutting there
  // leaves every kept block as it is.
  auto keep_here = [&] {
    if (c.block().length() > 1) c.insertBlock();
    stream_kept_pos_ = c.position();
    stream_kept_code_ = renderer_.code_blocks().size();
  };
  const int message = int(conversation_.messages.size());
  const ReplyParts parts = split_thinking(streaming_);
  const MessageRenderer::Marks marks = marks_for(stream_draft_spans_);
  c.beginEditBlock();
  if (parts.thinking_open) {
    // Reasoning streams as plain text under its header: the reply is written again whole.
    cut_from(stream_start_);
    renderer_.truncate_code_blocks(stream_code_start_);
    renderer_.write_reply(c, streaming_, message, stream_thinking_tokens_, false, true, marks);
    stream_kept_pos_ = -1;
  } else {
    if (stream_kept_pos_ < 0) {
      // The thinking block (if any) is final now: written once, kept.
      cut_from(stream_start_);
      renderer_.truncate_code_blocks(stream_code_start_);
      renderer_.write_thinking(c, parts, message, stream_thinking_tokens_, false, true, marks);
      stream_kept_chars_ = 0;
      keep_here();
    }
    // Complete Markdown blocks are written once and kept; only the last, still growing one
    // is written again on every update.
    cut_from(stream_kept_pos_);
    renderer_.truncate_code_blocks(stream_kept_code_);
    const qsizetype stable = MessageRenderer::stable_prefix(parts.answer, stream_kept_chars_);
    const MessageRenderer::Marks answer = marks.shifted(parts.answer_at);
    if (stable > stream_kept_chars_) {
      renderer_.write_markdown(c, parts.answer.mid(stream_kept_chars_, stable - stream_kept_chars_),
                               answer.shifted(stream_kept_chars_));
      stream_kept_chars_ = stable;
      keep_here();
    }
    renderer_.write_markdown(c, parts.answer.mid(stream_kept_chars_) + QStringLiteral("▍"),
                             answer.shifted(stream_kept_chars_));
  }
  c.endEditBlock();
  if (at_end) bar->setValue(bar->maximum());
  // Painted here, so that the pacer measures what a rewrite costs.
  transcript_->viewport()->repaint();
}

void ChatView::on_link(const QUrl& url) {
  const QString scheme = url.scheme();
  const QString what = url.path();
  if (scheme == chat_links::kCopy) {
    const int n = what.toInt();
    if (n >= 0 && n < renderer_.code_blocks().size()) QApplication::clipboard()->setText(renderer_.code_blocks()[n]);
  } else if (scheme == chat_links::kBranch) {
    const QStringList parts = what.split('/');
    if (parts.size() == 2) switch_branch(parts[0].toInt(), parts[1].toInt());
  } else if (scheme == chat_links::kThink) {
    toggle_thinking(what.toInt());
  } else if (scheme == chat_links::kEdit) {
    edit_message(what.toInt());
  } else if (scheme == "http" || scheme == "https" || scheme == "mailto") {
    QDesktopServices::openUrl(url);
  }
}

// ---- Saved conversations ----------------------------------------------------------------

namespace {
bool conversation_matches(const Conversation& c, const QString& query) {
  if (query.isEmpty()) return true;
  if (c.title.contains(query, Qt::CaseInsensitive) || c.system_prompt.contains(query, Qt::CaseInsensitive)) return true;
  for (const Conversation::Node& n : c.nodes)
    if (QString::fromStdString(n.message.content).contains(query, Qt::CaseInsensitive)) return true;
  for (const ChatMessage& m : c.messages)
    if (QString::fromStdString(m.content).contains(query, Qt::CaseInsensitive)) return true;
  return false;
}
}  // namespace

void ChatView::persist() {
  conversation_.updated = QDateTime::currentDateTimeUtc();
  try {
    store_.save(conversation_);
  } catch (const std::exception& e) {
    last_error_ = QString::fromStdString(e.what());
    emit error(tr("The conversation could not be saved: %1").arg(last_error_));
  }
  update_list_entry();
}

void ChatView::update_list_entry() {
  const QString title = conversation_.title.isEmpty() ? conversation_.derived_title() : conversation_.title;
  QListWidgetItem* item = nullptr;
  for (int i = 0; i < list_->count() && !item; ++i)
    if (list_->item(i)->data(Qt::UserRole).toString() == conversation_.id) item = list_->item(i);
  if (!item && !conversation_matches(conversation_, search_->text().trimmed())) return;
  list_->blockSignals(true);
  if (!item) {
    item = new QListWidgetItem(title);
    item->setData(Qt::UserRole, conversation_.id);
  } else {
    item = list_->takeItem(list_->row(item));  // the newest goes first, as reload_list sorts
    item->setText(title);
  }
  item->setToolTip(conversation_.updated.toLocalTime().toString());
  list_->insertItem(0, item);
  list_->setCurrentItem(item);
  list_->blockSignals(false);
}


void ChatView::reload_list() {
  list_->blockSignals(true);
  list_->clear();
  QStringList errors;
  const QString query = search_->text().trimmed();
  for (const Conversation& c : store_.load_all(&errors)) {
    if (!conversation_matches(c, query)) continue;
    auto* item = new QListWidgetItem(c.title.isEmpty() ? c.derived_title() : c.title, list_);
    item->setData(Qt::UserRole, c.id);
    item->setToolTip(c.updated.toLocalTime().toString());
    if (c.id == conversation_.id) list_->setCurrentItem(item);
  }
  // Files that could not be read are listed as skipped (not openable), their reason as tip.
  for (const QString& e : errors) {
    const QString file = e.section(':', 0, 0).section('/', -1);
    auto* item = new QListWidgetItem(tr("⚠ %1 (skipped: unreadable)").arg(file), list_);
    item->setFlags(item->flags() & ~(Qt::ItemIsEnabled | Qt::ItemIsSelectable));
    item->setToolTip(e);
    item->setData(Qt::UserRole + 1, e);
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

void ChatView::copy_markdown() const { QApplication::clipboard()->setText(conversation_.to_markdown()); }

bool ChatView::write_file(const QString& path, const QByteArray& bytes) {
  QSaveFile f(path);
  if (f.open(QIODevice::WriteOnly)) {
    f.write(bytes);
    if (f.commit()) return true;
  }
  last_error_ = tr("%1: cannot write: %2").arg(path, f.errorString());
  emit error(last_error_);
  return false;
}

bool ChatView::export_markdown(const QString& path) { return write_file(path, conversation_.to_markdown().toUtf8()); }

bool ChatView::export_json(const QString& path) {
  return write_file(path, QJsonDocument(conversation_.to_json()).toJson());
}

}  // namespace llmwb::ui
