#include "completion_view.h"

#include <QComboBox>
#include <QFontDatabase>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollBar>
#include <QSplitter>
#include <QVBoxLayout>

#include "live_text.h"
#include "llmwb/stats.h"
#include "sampling_params_editor.h"
#include "step_inspector_view.h"
#include "token_text.h"
#include "token_chips_view.h"

namespace llmwb::ui {

CompletionView::CompletionView(QWidget* parent)
    : QWidget(parent),
      prompt_(new QPlainTextEdit(this)),
      output_(new QPlainTextEdit(this)),
      sampling_(new SamplingParamsEditor(this)),
      generate_(new QPushButton(tr("Generate"), this)),
      stop_(new QPushButton(tr("Stop"), this)),
      stats_(new LiveText(3, this)),
      chips_(new TokenChipsView(this)),
      pause_(new QPushButton(tr("Pause"), this)),
      step_(new QPushButton(tr("Step"), this)),
      resume_(new QPushButton(tr("Resume"), this)),
      branches_(new QComboBox(this)),
      inspector_(new StepInspectorView(this)) {
  prompt_->setObjectName("completion_prompt");
  prompt_->setPlaceholderText(tr("Prompt (empty: start from BOS alone)"));
  output_->setObjectName("completion_output");
  output_->setReadOnly(true);
  output_->setPlaceholderText(tr("The generated text streams here."));
  // Its scroll bar would appear mid-generation and re-lay out (and repaint) the whole window.
  output_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOn);
  // Opaque, so that its repaint on every delta does not repaint the group box beneath it.
  output_->verticalScrollBar()->setAutoFillBackground(true);
  // Read-only: an undo step per delta would only grow without end.
  output_->setUndoRedoEnabled(false);
  generate_->setObjectName("generate");
  generate_->setToolTip(tr("Generate (Ctrl+Return)"));
  stop_->setObjectName("stop");
  stop_->setToolTip(tr("Stop (Esc)"));
  chips_->setObjectName("token_chips");
  pause_->setObjectName("pause");
  pause_->setToolTip(tr("Hold the generation after its current token (its KV cache stays)"));
  step_->setObjectName("step_one");
  step_->setToolTip(tr("Generate one more token, then hold again"));
  resume_->setObjectName("resume");
  branches_->setObjectName("branches");
  branches_->setToolTip(tr("The generation and the branches forked from its tokens"));
  stats_->setObjectName("completion_stats");

  auto* text_split = new QSplitter(Qt::Vertical, this);
  auto* prompt_box = new QGroupBox(tr("Prompt"), this);
  (new QVBoxLayout(prompt_box))->addWidget(prompt_);
  auto* output_box = new QGroupBox(tr("Generation"), this);
  (new QVBoxLayout(output_box))->addWidget(output_);
  auto* chips_box = new QGroupBox(
      tr("Tokens (hover for id and probability, click to inspect the step; underlined: accepted draft guesses)"), this);
  auto* chips_split = new QSplitter(Qt::Horizontal, chips_box);
  chips_split->addWidget(chips_);
  chips_split->addWidget(inspector_);
  chips_split->setStretchFactor(0, 1);
  chips_split->setStretchFactor(1, 2);
  (new QVBoxLayout(chips_box))->addWidget(chips_split);
  text_split->addWidget(prompt_box);
  text_split->addWidget(output_box);
  text_split->addWidget(chips_box);
  text_split->setStretchFactor(0, 1);
  text_split->setStretchFactor(1, 2);
  text_split->setStretchFactor(2, 3);

  auto* side = new QVBoxLayout;
  auto* params_box = new QGroupBox(tr("Sampling"), this);
  (new QVBoxLayout(params_box))->addWidget(sampling_);
  side->addWidget(params_box);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(generate_);
  buttons->addWidget(stop_);
  side->addLayout(buttons);
  auto* hold = new QHBoxLayout;
  hold->addWidget(pause_);
  hold->addWidget(step_);
  hold->addWidget(resume_);
  side->addLayout(hold);
  side->addWidget(branches_);
  side->addWidget(stats_);
  side->addStretch(1);

  auto* layout = new QHBoxLayout(this);
  layout->addWidget(text_split, 1);
  layout->addLayout(side);

  connect(generate_, &QPushButton::clicked, this, &CompletionView::generate);
  connect(stop_, &QPushButton::clicked, this, &CompletionView::stop);
  connect(pause_, &QPushButton::clicked, this, &CompletionView::pause);
  connect(step_, &QPushButton::clicked, this, &CompletionView::step_one);
  connect(resume_, &QPushButton::clicked, this, &CompletionView::resume);
  connect(chips_, &TokenChipsView::chip_clicked, this, &CompletionView::inspect);
  connect(inspector_, &StepInspectorView::fork_requested, this, &CompletionView::fork);
  connect(branches_, qOverload<int>(&QComboBox::activated), this, &CompletionView::show_branch);
  sampling_->restore("completion/sampling");
  update_buttons();
}

QString CompletionView::output_text() const { return output_->toPlainText(); }
QString CompletionView::stats_text() const { return stats_->text(); }

void CompletionView::set_model_ready(bool ready) {
  ready_ = ready;
  update_buttons();
}

void CompletionView::set_vocabulary(const QStringList& vocabulary) {
  vocabulary_ = vocabulary;
  chips_->set_vocabulary(vocabulary);
}

void CompletionView::update_buttons() {
  generate_->setEnabled(ready_ && ticket_ == 0);
  stop_->setEnabled(ticket_ != 0);
  pause_->setEnabled(ticket_ != 0 && !paused_);
  step_->setEnabled(ticket_ != 0 && paused_);
  resume_->setEnabled(ticket_ != 0 && paused_);
  branches_->setEnabled(branch_list_.size() > 1);
}

void CompletionView::generate() {
  if (!ready_ || ticket_ != 0) return;
  GenerationRequest r;
  r.prompt = prompt_->toPlainText().toStdString();
  r.params = sampling_->params();
  sampling_->save("completion/sampling");
  branch_list_.clear();
  branches_->clear();
  start(std::move(r), Branch{tr("Generation"), 0, {}, {}, {}});
}

void CompletionView::start(GenerationRequest r, Branch b) {
  r.ticket = next_ticket();
  b.ticket = r.ticket;
  ticket_ = r.ticket;
  paused_ = false;
  generated_tokens_ = 0;
  last_reason_ = FinishReason::None;
  branch_list_.push_back(std::move(b));
  branches_->addItem(branch_list_.back().label);
  show_branch(int(branch_list_.size()) - 1);
  stats_->setText(tr("waiting for the first token…"));
  update_buttons();
  emit generate_requested(r);
}

CompletionView::Branch* CompletionView::branch_of(quint64 ticket) {
  for (Branch& b : branch_list_)
    if (b.ticket == ticket) return &b;
  return nullptr;
}

void CompletionView::show_branch(int i) {
  if (i < 0 || i >= int(branch_list_.size())) return;
  shown_ = i;
  branches_->setCurrentIndex(i);
  const Branch& b = branch_list_[size_t(i)];
  output_->setPlainText(b.text);
  chips_->clear();
  chips_->append(b.ids, b.probs);
  inspector_->clear();
}

void CompletionView::pause() {
  if (ticket_ != 0 && !paused_) emit pause_requested(ticket_);
}

void CompletionView::step_one() {
  if (ticket_ != 0 && paused_) emit step_requested(ticket_);
}

void CompletionView::resume() {
  if (ticket_ != 0 && paused_) emit resume_requested(ticket_);
}

void CompletionView::on_paused(quint64 ticket, bool paused) {
  if (ticket != ticket_) return;
  paused_ = paused;
  if (paused) stats_->setText(tr("paused after %1 tokens · Step or Resume; click a token to inspect it").arg(generated_tokens_));
  update_buttons();
}

void CompletionView::inspect(int chip) {
  if (shown_ < 0) return;
  // A fork's first chips are its source's tokens (the forked one's step is the source's too):
  // their steps are the source generation's.
  int b = shown_, index = chip;
  while (branch_list_[size_t(b)].source >= 0 && index < branch_list_[size_t(b)].offset) b = branch_list_[size_t(b)].source;
  index -= branch_list_[size_t(b)].offset;
  asked_chip_ = chip;
  inspector_->show_message(tr("Recording the step of token %1…").arg(chip + 1));
  emit inspect_requested(branch_list_[size_t(b)].ticket, index);
}

void CompletionView::on_step_inspected(quint64, int, const StepInspection& step) {
  if (shown_ < 0 || asked_chip_ < 0) return;
  chips_->set_selected(asked_chip_);
  inspector_->show_step(asked_chip_, step);
}

void CompletionView::on_inspect_failed(quint64, int, const QString& error) {
  if (shown_ < 0 || asked_chip_ < 0) return;
  inspector_->show_message(tr("Token %1: %2").arg(asked_chip_ + 1).arg(error));
}

void CompletionView::fork(const std::vector<int>& prompt_ids, int from_index, int token) {
  if (!ready_ || shown_ < 0) return;
  // A generation still running (or paused) ends here; its text stays as a branch.
  if (ticket_ != 0) emit abort_requested(ticket_);
  const Branch& from = branch_list_[size_t(shown_)];
  GenerationRequest r;
  r.prompt_ids = prompt_ids;
  r.params = sampling_->params();
  Branch b;
  b.label = tr("Fork at token %1 → id %2").arg(from_index + 1).arg(token);
  // The branch starts as its source did up to the fork: the tokens before it and the new one.
  b.ids.assign(from.ids.begin(), from.ids.begin() + std::min<size_t>(size_t(from_index), from.ids.size()));
  b.probs.assign(from.probs.begin(), from.probs.begin() + std::min<size_t>(size_t(from_index), from.probs.size()));
  b.ids.push_back(token);
  b.probs.push_back(NAN);
  for (int id : b.ids) b.text += token_piece(vocabulary_, id);
  b.source = shown_;
  b.offset = int(b.ids.size());
  ticket_ = 0;
  start(std::move(r), std::move(b));
}

void CompletionView::stop() {
  if (ticket_ != 0) emit abort_requested(ticket_);
}

void CompletionView::on_delta(const TokenDelta& d) {
  if (d.ticket != ticket_ || ticket_ == 0) return;
  Branch* b = branch_of(d.ticket);
  const bool on_screen = b && shown_ >= 0 && &branch_list_[size_t(shown_)] == b;
  if (b) {
    b->text += QString::fromStdString(d.text);
    b->ids.insert(b->ids.end(), d.token_ids.begin(), d.token_ids.end());
    b->probs.insert(b->probs.end(), d.token_probs.begin(), d.token_probs.end());
  }
  if (!d.text.empty() && on_screen) {
    const QString piece = QString::fromStdString(d.text);
    const bool at_end = output_->verticalScrollBar()->value() == output_->verticalScrollBar()->maximum();
    QTextCursor c(output_->document());
    c.movePosition(QTextCursor::End);
    // In an edit block the cursor skips measuring its x position, which lays out the whole
    // paragraph on every insert.
    c.beginEditBlock();
    c.insertText(piece);
    c.endEditBlock();
    if (at_end) output_->verticalScrollBar()->setValue(output_->verticalScrollBar()->maximum());
  }
  if (on_screen) chips_->append(d.token_ids, d.token_probs, d.token_from_draft);
  generated_tokens_ = d.num_output_tokens;
  // Speculative decoding: how much of the output the draft guessed right.
  const QString spec = d.speculative.drafts == 0
                           ? QString()
                           : tr(" · %1% of guesses accepted · %2 tokens per verification")
                                 .arg(100.0 * d.speculative.acceptance_rate(), 0, 'f', 0)
                                 .arg(d.speculative.mean_acceptance_length(), 0, 'f', 2);
  if (!d.finished) {
    stats_->setText(tr("%1 tokens · TTFT %2 ms").arg(generated_tokens_).arg(d.time_to_first_token * 1000, 0, 'f', 1) + spec);
    return;
  }
  last_reason_ = d.finish_reason;
  ticket_ = 0;
  paused_ = false;
  const double tpot = time_per_output_token(d.total_time, d.time_to_first_token, size_t(std::max(generated_tokens_, 0)));
  QString line = tr("%1 tokens · %2 · TTFT %3 ms · TPOT %4 ms · %5 tok/s")
                     .arg(generated_tokens_)
                     .arg(to_string(d.finish_reason))
                     .arg(d.time_to_first_token * 1000, 0, 'f', 1)
                     .arg(tpot * 1000, 0, 'f', 2)
                     .arg(d.total_time > 0 ? generated_tokens_ / d.total_time : 0.0, 0, 'f', 0);
  line += spec;
  if (!d.error.empty()) line = tr("Error: %1").arg(QString::fromStdString(d.error));
  stats_->setText(line);
  update_buttons();
  emit generation_finished(d);
}

}  // namespace llmwb::ui
