// completion_view.h — raw completion: a prompt editor, sampling parameters, the streaming
// output, and the generated tokens as chips (id and probability on hover).
#pragma once

#include <QStringList>
#include <QWidget>

#include "generation_request.h"
#include "token_delta.h"

class QPlainTextEdit;
class QPushButton;

namespace llmwb::ui {

class LiveText;
class SamplingParamsEditor;
class TokenChipsView;

class CompletionView : public QWidget {
  Q_OBJECT

 public:
  explicit CompletionView(QWidget* parent = nullptr);

  QPlainTextEdit* prompt_editor() const { return prompt_; }
  SamplingParamsEditor* sampling() const { return sampling_; }
  QPushButton* generate_button() const { return generate_; }
  QPushButton* stop_button() const { return stop_; }
  TokenChipsView* chips() const { return chips_; }
  // The statistics line under the buttons (tokens, TTFT, TPOT, speculation's acceptance).
  QString stats_text() const;
  QString output_text() const;
  bool is_generating() const { return ticket_ != 0; }
  int generated_tokens() const { return generated_tokens_; }
  FinishReason last_finish_reason() const { return last_reason_; }

  void set_model_ready(bool ready);
  void set_vocabulary(const QStringList& vocabulary);

 public slots:
  void generate();
  void stop();
  void on_delta(const llmwb::ui::TokenDelta& delta);

 signals:
  void generate_requested(const llmwb::ui::GenerationRequest& request);
  void abort_requested(quint64 ticket);
  void generation_finished(const llmwb::ui::TokenDelta& delta);

 private:
  void update_buttons();

  QPlainTextEdit* prompt_;
  QPlainTextEdit* output_;
  SamplingParamsEditor* sampling_;
  QPushButton* generate_;
  QPushButton* stop_;
  LiveText* stats_;  // changes with every delta: must not re-lay out the window
  TokenChipsView* chips_;
  quint64 ticket_ = 0;
  bool ready_ = false;
  int generated_tokens_ = 0;
  FinishReason last_reason_ = FinishReason::None;
};

}  // namespace llmwb::ui
