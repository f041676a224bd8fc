#include "completion_view.h"

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
      chips_(new TokenChipsView(this)) {
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
  stats_->setObjectName("completion_stats");

  auto* text_split = new QSplitter(Qt::Vertical, this);
  auto* prompt_box = new QGroupBox(tr("Prompt"), this);
  (new QVBoxLayout(prompt_box))->addWidget(prompt_);
  auto* output_box = new QGroupBox(tr("Generation"), this);
  (new QVBoxLayout(output_box))->addWidget(output_);
  auto* chips_box = new QGroupBox(tr("Tokens (hover for id and probability; underlined: accepted draft guesses)"), this);
  (new QVBoxLayout(chips_box))->addWidget(chips_);
  text_split->addWidget(prompt_box);
  text_split->addWidget(output_box);
  text_split->addWidget(chips_box);
  text_split->setStretchFactor(0, 1);
  text_split->setStretchFactor(1, 3);
  text_split->setStretchFactor(2, 2);

  auto* side = new QVBoxLayout;
  auto* params_box = new QGroupBox(tr("Sampling"), this);
  (new QVBoxLayout(params_box))->addWidget(sampling_);
  side->addWidget(params_box);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(generate_);
  buttons->addWidget(stop_);
  side->addLayout(buttons);
  side->addWidget(stats_);
  side->addStretch(1);

  auto* layout = new QHBoxLayout(this);
  layout->addWidget(text_split, 1);
  layout->addLayout(side);

  connect(generate_, &QPushButton::clicked, this, &CompletionView::generate);
  connect(stop_, &QPushButton::clicked, this, &CompletionView::stop);
  sampling_->restore("completion/sampling");
  update_buttons();
}

QString CompletionView::output_text() const { return output_->toPlainText(); }
QString CompletionView::stats_text() const { return stats_->text(); }

void CompletionView::set_model_ready(bool ready) {
  ready_ = ready;
  update_buttons();
}

void CompletionView::set_vocabulary(const QStringList& vocabulary) { chips_->set_vocabulary(vocabulary); }

void CompletionView::update_buttons() {
  generate_->setEnabled(ready_ && ticket_ == 0);
  stop_->setEnabled(ticket_ != 0);
}

void CompletionView::generate() {
  if (!ready_ || ticket_ != 0) return;
  GenerationRequest r;
  r.ticket = next_ticket();
  r.prompt = prompt_->toPlainText().toStdString();
  r.params = sampling_->params();
  sampling_->save("completion/sampling");
  ticket_ = r.ticket;
  generated_tokens_ = 0;
  last_reason_ = FinishReason::None;
  output_->clear();
  chips_->clear();
  stats_->setText(tr("waiting for the first token…"));
  update_buttons();
  emit generate_requested(r);
}

void CompletionView::stop() {
  if (ticket_ != 0) emit abort_requested(ticket_);
}

void CompletionView::on_delta(const TokenDelta& d) {
  if (d.ticket != ticket_ || ticket_ == 0) return;
  if (!d.text.empty()) {
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
  chips_->append(d.token_ids, d.token_probs, d.token_from_draft);
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
