// step_inspector_view.h — one generated token's step from inside (llmwb/step_inspection.h):
// the sampler's stages over the top candidates, the logit lens per layer, the token's attention
// in every layer and head, and where the step's time went. Selecting a candidate and pressing
// Fork continues the generation from it as a new branch.
#pragma once

#include <QWidget>

#include <vector>

#include "step_inspection_meta.h"

class QLabel;
class QPushButton;
class QTableWidget;
class QTabWidget;

namespace llmwb::ui {

class AttentionRowsChart;

class StepInspectorView : public QWidget {
  Q_OBJECT

 public:
  explicit StepInspectorView(QWidget* parent = nullptr);

  // Shows the step of generated token `index` (0-based).
  void show_step(int index, const StepInspection& step);
  void show_message(const QString& text);
  void clear();

  bool has_step() const { return index_ >= 0; }
  int index() const { return index_; }
  const StepInspection& step() const { return step_; }
  QTableWidget* sampler_table() const { return sampler_; }
  QTableWidget* lens_table() const { return lens_; }
  QTableWidget* time_table() const { return time_; }
  QTabWidget* tabs() const { return tabs_; }
  QPushButton* fork_button() const { return fork_; }
  QString summary() const;

 signals:
  // The context of the shown step followed by the selected candidate.
  void fork_requested(const std::vector<int>& prompt_ids, int from_index, int token);
  // The physical KV blocks the shown step's attention read (empty when none is shown): the KV
  // block map outlines them.
  void blocks_read(const std::vector<int>& blocks);

 private:
  void fill_sampler();
  void fill_lens();
  void fill_time();
  void update_fork();

  QLabel* title_;
  QTabWidget* tabs_;
  QTableWidget* sampler_;
  QTableWidget* lens_;
  AttentionRowsChart* attention_;
  QLabel* attention_note_;
  QTableWidget* time_;
  QLabel* time_note_;
  QPushButton* fork_;
  StepInspection step_;
  int index_ = -1;
};

}  // namespace llmwb::ui
