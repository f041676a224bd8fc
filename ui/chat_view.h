// chat_view.h — multi-turn chat through the model's chat template: a system prompt, replies
// rendered as Markdown while they stream, a quiet footer per reply (tokens, TTFT, tok/s, stop
// reason, the engine configuration), regenerate and edit as branches (‹ 2/3 ›), reasoning as a
// collapsible thinking block, a context meter counted by the engine's tokenizer; conversations
// saved as JSON after every turn, searched, renamed, exported as Markdown or JSON.
#pragma once

#include <QList>
#include <QStringList>
#include <QWidget>

#include <memory>
#include <set>

#include "conversation.h"
#include "conversation_store.h"
#include "generation_request.h"
#include "llmwb/model_info.h"
#include "message_renderer.h"
#include "token_count_request.h"
#include "token_delta.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTextBrowser;
class QTimer;
class QUrl;

namespace llmwb::ui {

class FramePacer;
class SamplingParamsEditor;

class ChatView : public QWidget {
  Q_OBJECT

 public:
  explicit ChatView(QWidget* parent = nullptr);
  ~ChatView() override;

  // Where conversations are kept (tests point it at a scratch folder); reloads the list.
  void set_store(const ConversationStore& store);
  const ConversationStore& store() const { return store_; }
  // The template recognised from the model's metadata; "auto" resolves to it.
  void set_model(bool ready, const ChatTemplate& detected, const QString& model_name);
  // The loaded model's context length, backend and path (for the meter, the footer and the
  // per-model defaults: template and sampling come back when the model is opened again).
  void set_model_details(const ModelInfo& info);

  const Conversation& conversation() const { return conversation_; }
  QPlainTextEdit* input() const { return input_; }
  QLineEdit* system_prompt() const { return system_; }
  QComboBox* format_box() const { return format_; }
  // "Enable thinking": shown only where the format has the switch (Qwen3).
  QCheckBox* thinking_box() const { return thinking_; }
  // "Show accepted draft tokens": the text of draft guesses the model accepted (speculative
  // decoding) on a tinted background, in replies as they stream and as saved
  // (AppSettings::show_draft_tokens).
  QCheckBox* draft_marks_box() const { return show_drafts_; }
  // Which template the chat uses, or the message that the model's is not recognised.
  QLabel* template_label() const { return template_label_; }
  SamplingParamsEditor* sampling() const { return sampling_; }
  QTextBrowser* transcript() const { return transcript_; }
  QListWidget* conversation_list() const { return list_; }
  QLineEdit* search_box() const { return search_; }
  QString transcript_text() const;
  bool is_generating() const { return ticket_ != 0; }
  bool is_paused() const { return paused_; }
  QPushButton* pause_button() const { return hold_; }
  QPushButton* step_button() const { return step_; }
  ChatFormat effective_format() const;
  ChatTemplate effective_template() const;
  // The last reply's prompt: as rendered, and as the engine tokenized it.
  const std::string& last_prompt_text() const { return last_prompt_text_; }
  const std::vector<int>& last_prompt_ids() const { return last_prompt_ids_; }
  QString last_error() const { return last_error_; }
  // Saved conversation files that could not be read ("path: why"), left as they are on disk;
  // listed as skipped and reported once through error() when the set changes.
  QStringList unreadable_conversations() const { return unreadable_; }

  // The context meter: prompt tokens of the conversation with the draft in the input box, as
  // the engine counted them (-1 until counted), and the meter's text.
  int context_prompt_tokens() const { return counts_.isEmpty() ? -1 : counts_.front(); }
  int context_length() const { return context_length_; }
  QLabel* context_label() const { return context_label_; }
  QProgressBar* context_bar() const { return context_bar_; }
  // Leave the oldest turns out of the prompt when a message would not fit (a setting; off: the
  // chat says so and offers it instead of sending).
  QCheckBox* auto_truncate_box() const { return auto_truncate_; }
  QPushButton* truncate_and_send_button() const { return truncate_send_; }
  // Rewrites of the streaming reply so far and their GUI-thread cost (the GUI benchmark).
  long stream_rewrites() const { return stream_rewrites_; }
  double stream_rewrite_ms() const;
  // The code blocks of the transcript, in order (what their Copy links copy).
  const QStringList& code_blocks() const { return renderer_.code_blocks(); }

 public slots:
  void send();
  // Sends with the oldest turns left out as far as needed to fit the context.
  void truncate_and_send();
  void stop();
  // Holds the streaming reply after its current token (its KV cache stays), lets it make one
  // more token, lets it run on (Engine::pause / step_request / resume).
  void toggle_pause();
  void step_one();
  void on_paused(quint64 ticket, bool paused);
  void regenerate();
  void edit_last();
  // Forks at user message `index`: its text returns to the input box, and sending makes a
  // new branch beside it.
  void edit_message(int index);
  // Shows the previous (-1) or next (+1) alternative of message `index`.
  void switch_branch(int index, int step);
  void toggle_thinking(int index);
  void new_chat();
  void open_conversation(const QString& id);
  void rename_conversation(const QString& id, const QString& title);
  void focus_input();
  void copy_markdown() const;
  // Throws nothing: an I/O failure is reported through error().
  bool export_markdown(const QString& path);
  bool export_json(const QString& path);
  void on_delta(const llmwb::ui::TokenDelta& delta);
  void on_tokens_counted(quint64 ticket, const QList<int>& counts);

 signals:
  void generate_requested(const llmwb::ui::GenerationRequest& request);
  void abort_requested(quint64 ticket);
  void pause_requested(quint64 ticket);
  void step_requested(quint64 ticket);
  void resume_requested(quint64 ticket);
  void count_requested(const llmwb::ui::TokenCountRequest& request);
  void error(const QString& message);
  void reply_finished();

 protected:
  // A theme change draws the transcript again in the new palette's colours.
  void changeEvent(QEvent* event) override;

 private:
  void build_actions();
  void start_reply(int dropped_messages = 0);
  void render();
  // Writes the streaming reply again (alone) at the end of the transcript.
  void update_stream();
  MessageRenderer::Style render_style() const;
  // The accepted draft tokens' text of a reply to mark (none while the toggle is off).
  MessageRenderer::Marks marks_for(const TextSpans& spans) const;
  void on_link(const QUrl& url);
  void persist();
  void reload_list();
  // The current conversation's entry in the list, updated in place (a turn must not read every
  // saved file again).
  void update_list_entry();
  void show_unreadable(const QStringList& errors);
  // At start-up the newest saved conversation comes back, as the user left it.
  void restore_newest();
  void update_buttons();
  // The template label and the thinking switch follow the effective format.
  void update_template_info();
  // Asks the engine thread to count the conversation with the draft (debounced).
  void request_count();
  void update_meter();
  // Messages to leave out so that the draft fits, or -1 when nothing fits; 0 when it fits or
  // the count is not known yet.
  int messages_to_drop(bool* fits) const;
  QString engine_description(const SamplingParams& p) const;
  QString model_key() const;
  bool write_file(const QString& path, const QByteArray& bytes);

  ConversationStore store_;
  Conversation conversation_;
  QLineEdit* search_;
  QListWidget* list_;
  QComboBox* format_;
  QCheckBox* thinking_;
  QCheckBox* show_drafts_;
  QLabel* template_label_;
  QLineEdit* system_;
  QTextBrowser* transcript_;
  QPlainTextEdit* input_;
  QPushButton* send_;
  QPushButton* stop_;
  QPushButton* hold_;   // Pause / Resume the streaming reply (the token inspector's hold)
  QPushButton* step_;   // one more token while held
  bool paused_ = false;
  QPushButton* regenerate_;
  QPushButton* edit_;
  SamplingParamsEditor* sampling_;
  QLabel* status_;
  QLabel* unreadable_label_;
  QProgressBar* context_bar_;
  QLabel* context_label_;
  QCheckBox* auto_truncate_;
  QPushButton* truncate_send_;
  QTimer* count_timer_;
  std::unique_ptr<FramePacer> stream_pacer_;
  QStringList unreadable_;
  ChatTemplate detected_;
  std::string last_prompt_text_;
  std::vector<int> last_prompt_ids_;
  bool ready_ = false;
  quint64 ticket_ = 0;
  QString streaming_;  // the reply being generated
  int stream_thinking_tokens_ = 0;
  TextSpans stream_draft_spans_;  // the accepted draft tokens' text in streaming_
  int stream_start_ = -1;  // where the streaming reply begins in the transcript, -1: not shown
  qsizetype stream_code_start_ = 0;
  // The part of the streaming answer that is final (complete Markdown blocks): its length in
  // characters, where it ends in the transcript (-1: nothing kept yet) and its code blocks.
  qsizetype stream_kept_chars_ = 0;
  int stream_kept_pos_ = -1;
  long stream_rewrites_ = 0;
  qsizetype stream_kept_code_ = 0;
  int dropped_messages_ = 0;  // left out of the running request's prompt
  QString running_config_;    // the engine configuration of the running request
  std::set<int> expanded_thinking_;  // nodes whose thinking block is open
  MessageRenderer renderer_{MessageRenderer::Style{}};
  // Context meter.
  ModelInfo model_;
  int context_length_ = 0;
  quint64 count_ticket_ = 0;
  QList<int> counts_;                 // prompt tokens per variant (0: all messages)
  std::vector<int> variant_drops_;    // messages each variant leaves out
  QString last_error_;
};

}  // namespace llmwb::ui
