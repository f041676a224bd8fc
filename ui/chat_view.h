// chat_view.h — multi-turn chat through the model's chat template: a system prompt, streaming
// replies, stop, regenerate, edit and resend; conversations saved as JSON after every turn,
// copied or exported as Markdown.
#pragma once

#include <QStringList>
#include <QWidget>

#include "conversation.h"
#include "conversation_store.h"
#include "generation_request.h"
#include "token_delta.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPlainTextEdit;
class QPushButton;
class QTextBrowser;

namespace llmwb::ui {

class SamplingParamsEditor;

class ChatView : public QWidget {
  Q_OBJECT

 public:
  explicit ChatView(QWidget* parent = nullptr);

  // Where conversations are kept (tests point it at a scratch folder); reloads the list.
  void set_store(const ConversationStore& store);
  const ConversationStore& store() const { return store_; }
  // The template recognised from the model's metadata; "auto" resolves to it.
  void set_model(bool ready, const ChatTemplate& detected, const QString& model_name);

  const Conversation& conversation() const { return conversation_; }
  QPlainTextEdit* input() const { return input_; }
  QLineEdit* system_prompt() const { return system_; }
  QComboBox* format_box() const { return format_; }
  // "Enable thinking": shown only where the format has the switch (Qwen3).
  QCheckBox* thinking_box() const { return thinking_; }
  // Which template the chat uses, or the message that the model's is not recognised.
  QLabel* template_label() const { return template_label_; }
  SamplingParamsEditor* sampling() const { return sampling_; }
  QString transcript_text() const;
  bool is_generating() const { return ticket_ != 0; }
  ChatFormat effective_format() const;
  ChatTemplate effective_template() const;
  // The last reply's prompt: as rendered, and as the engine tokenized it.
  const std::string& last_prompt_text() const { return last_prompt_text_; }
  const std::vector<int>& last_prompt_ids() const { return last_prompt_ids_; }
  QString last_error() const { return last_error_; }
  // Saved conversation files that could not be read ("path: why"), left as they are on disk;
  // shown under the list and reported once through error() when the set changes.
  QStringList unreadable_conversations() const { return unreadable_; }

 public slots:
  void send();
  void stop();
  void regenerate();
  void edit_last();
  void new_chat();
  void open_conversation(const QString& id);
  void copy_markdown() const;
  // Throws nothing: an I/O failure is reported through error().
  bool export_markdown(const QString& path);
  void on_delta(const llmwb::ui::TokenDelta& delta);

 signals:
  void generate_requested(const llmwb::ui::GenerationRequest& request);
  void abort_requested(quint64 ticket);
  void error(const QString& message);
  void reply_finished();

 private:
  void start_reply();
  void render();
  // Appends streamed text to the reply on screen (before its "▍"), instead of render().
  void append_streamed(const QString& piece);
  static QString shown_reply(QString reply);
  void persist();
  void reload_list();
  void show_unreadable(const QStringList& errors);
  // At start-up the newest saved conversation comes back, as the user left it.
  void restore_newest();
  void update_buttons();
  // The template label and the thinking switch follow the effective format.
  void update_template_info();

  ConversationStore store_;
  Conversation conversation_;
  QListWidget* list_;
  QComboBox* format_;
  QCheckBox* thinking_;
  QLabel* template_label_;
  QLineEdit* system_;
  QTextBrowser* transcript_;
  QPlainTextEdit* input_;
  QPushButton* send_;
  QPushButton* stop_;
  QPushButton* regenerate_;
  QPushButton* edit_;
  SamplingParamsEditor* sampling_;
  QLabel* status_;
  QLabel* unreadable_label_;
  QStringList unreadable_;
  ChatTemplate detected_;
  std::string last_prompt_text_;
  std::vector<int> last_prompt_ids_;
  bool ready_ = false;
  quint64 ticket_ = 0;
  QString streaming_;  // the reply being generated
  bool streaming_shown_ = false;  // the transcript on screen ends with the streaming reply
  QString last_error_;
};

}  // namespace llmwb::ui
