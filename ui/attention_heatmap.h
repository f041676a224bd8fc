// attention_heatmap.h — attention weights of the last N generated tokens over the whole
// context, for a chosen layer and head or the mean over heads, token text on both axes.
// The engine captures weights only while this view is on screen (capture_changed tells it):
// capturing costs the engine a copy every step.
//
// Every snapshot (one per generated token) changes the map, the query labels (the rows slide
// by a token) and often the key labels, so all of those are drawn on the LivePlot's live layer,
// the axes from pixmaps of their labels kept across draws (live_axis.h): a draw renders only
// the labels it has not shown before, and lays the plot out again only when a label no longer
// fits its margin. The key axis grows in chunks of tokens (the columns past the context are
// zero, like the causal padding), so columns and labels keep their places as tokens arrive.
#pragma once

#include <QSharedPointer>
#include <QStringList>

#include <memory>

#include "live_view.h"
#include "llmwb/telemetry.h"

class QComboBox;
class QCPAxisTickerText;
class QCPColorMap;
class QCPColorScale;
class QSpinBox;

namespace llmwb::ui {

class LivePlot;
class LiveText;

class AttentionHeatmap : public LiveView {
  Q_OBJECT

 public:
  explicit AttentionHeatmap(QWidget* parent = nullptr);

  void set_model(int n_layers, int n_heads, const QStringList& vocabulary);
  void set_snapshot(std::shared_ptr<const AttentionSnapshot> snapshot);
  bool has_data() const { return snapshot_ != nullptr; }
  std::shared_ptr<const AttentionSnapshot> snapshot() const { return snapshot_; }
  int layer() const;
  int max_queries() const;
  // -1: mean over heads.
  int head() const;
  void set_head(int head);

  LivePlot* live_plot() const { return plot_; }
  QCPColorMap* color_map() const { return map_; }
  // Keys shown on the x axis: the context rounded up to a whole chunk.
  int shown_keys() const { return shown_keys_; }
  // Replots of every layer (the first draw, a restyle, a new model, a label outgrowing its
  // margin, a resize); every other draw redrew the live layer alone.
  long full_replots() const;

 signals:
  void capture_changed(bool on, int layer, int max_queries);

 protected:
  void draw() override;
  void restyle() override;
  void on_screen_changed(bool on) override;

 private:
  void emit_capture();
  // Fills the map, the axis ranges and labels and the status line from the snapshot.
  void show_snapshot(const AttentionSnapshot& s);
  void show_nothing();

  QSpinBox* layer_;
  QComboBox* head_;
  QSpinBox* queries_;
  LiveText* status_;  // changes with every snapshot: must not re-lay out the window
  LivePlot* plot_;
  QCPColorMap* map_;
  QCPColorScale* scale_;
  QSharedPointer<QCPAxisTickerText> key_ticker_, query_ticker_;
  QStringList key_labels_, query_labels_;  // what the tickers hold now
  int key_every_ = 0, query_every_ = 0;
  int shown_keys_ = 0;
  bool replot_all_ = true;  // the next draw replots every layer
  QStringList vocabulary_;
  std::shared_ptr<const AttentionSnapshot> snapshot_;
  bool shown_ = false;
};

}  // namespace llmwb::ui
