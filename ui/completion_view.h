// completion_view.h — raw completion: a prompt editor, sampling parameters, the streaming
// output, and the generated tokens as chips (id and probability on hover).
#pragma once

#include <QStringList>
#include <QWidget>

#include <vector>

#include "step_inspection_meta.h"
#include "generation_request.h"
#include "token_delta.h"

class QComboBox;
class QPlainTextEdit;
class QPushButton;

namespace llmwb::ui {

class LiveText;
class SamplingParamsEditor;
class StepInspectorView;
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
  QPushButton* pause_button() const { return pause_; }
  QPushButton* step_button() const { return step_; }
  QPushButton* resume_button() const { return resume_; }
  StepInspectorView* inspector() const { return inspector_; }
  QComboBox* branches() const { return branches_; }
  int branch_count() const { return int(branch_list_.size()); }
  bool is_paused() const { return paused_; }
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
  // The token inspector: pause, step one token, resume the running generation; open the step of
  // generated token `index` of the shown branch; continue from a candidate as a new branch.
  void pause();
  void step_one();
  void resume();
  void inspect(int index);
  void fork(const std::vector<int>& prompt_ids, int from_index, int token);
  void on_paused(quint64 ticket, bool paused);
  void on_step_inspected(quint64 ticket, int index, const llmwb::StepInspection& step);
  void on_inspect_failed(quint64 ticket, int index, const QString& error);

 signals:
  void generate_requested(const llmwb::ui::GenerationRequest& request);
  void abort_requested(quint64 ticket);
  void generation_finished(const llmwb::ui::TokenDelta& delta);
  void pause_requested(quint64 ticket);
  void step_requested(quint64 ticket);
  void resume_requested(quint64 ticket);
  void inspect_requested(quint64 ticket, int index);

 private:
  void update_buttons();
  // One generation's text and tokens: the first one and each fork from the inspector.
  struct Branch {
    QString label;
    quint64 ticket = 0;
    QString text;
    std::vector<int> ids;
    std::vector<float> probs;
    int source = -1;   // the branch it forked from
    int offset = 0;    // chips taken from the source (the tokens before the fork and the fork's)
  };
  void start(GenerationRequest r, Branch b);
  void show_branch(int i);
  Branch* branch_of(quint64 ticket);

  QPlainTextEdit* prompt_;
  QPlainTextEdit* output_;
  SamplingParamsEditor* sampling_;
  QPushButton* generate_;
  QPushButton* stop_;
  LiveText* stats_;  // changes with every delta: must not re-lay out the window
  TokenChipsView* chips_;
  QPushButton* pause_;
  QPushButton* step_;
  QPushButton* resume_;
  QComboBox* branches_;
  StepInspectorView* inspector_;
  std::vector<Branch> branch_list_;
  int shown_ = -1;   // the branch on screen
  int asked_chip_ = -1;   // the chip whose step was asked for last
  QStringList vocabulary_;
  bool paused_ = false;
  quint64 ticket_ = 0;
  bool ready_ = false;
  int generated_tokens_ = 0;
  FinishReason last_reason_ = FinishReason::None;
};

}  // namespace llmwb::ui
