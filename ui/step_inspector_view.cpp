#include "step_inspector_view.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QPushButton>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <map>


namespace llmwb::ui {

// Every layer x head row of the token's attention over the positions it attends: one line of
// cells per head, layers separated by a gap, darker where more weight went.
class AttentionRowsChart : public QWidget {
 public:
  explicit AttentionRowsChart(QWidget* parent) : QWidget(parent) { setMinimumHeight(120); }
  void set(const StepAttention& a) {
    a_ = a;
    update();
  }
  QSize sizeHint() const override { return {400, 240}; }

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    p.fillRect(rect(), palette().color(QPalette::Base));
    if (a_.weights.empty() || a_.n_heads == 0) return;
    const int rows = int(a_.weights.size());
    const int gaps = std::max(0, a_.n_layers - 1);
    const int cols = a_.position + 1;
    const int label_w = 36;
    const double cw = double(width() - label_w) / cols;
    const double rh = std::max(1.0, double(height() - gaps * 3) / rows);
    const QColor hot = palette().color(QPalette::Highlight);
    for (int r = 0; r < rows; ++r) {
      const int layer = r / a_.n_heads;
      const double y = r * rh + layer * 3;
      const auto& w = a_.weights[size_t(r)];
      float mx = 0;
      for (float x : w) mx = std::max(mx, x);
      for (int c = 0; c < cols && c < int(w.size()); ++c) {
        QColor col = hot;
        col.setAlphaF(mx > 0 ? std::clamp(double(w[size_t(c)]) / mx, 0.0, 1.0) : 0.0);
        p.fillRect(QRectF(label_w + c * cw, y, std::max(1.0, cw - (cw > 4 ? 1 : 0)), std::max(1.0, rh - 1)), col);
      }
      if (r % a_.n_heads == 0) {
        p.setPen(palette().color(QPalette::Text));
        p.drawText(QRectF(0, y, label_w - 4, std::max(rh * a_.n_heads, 12.0)), Qt::AlignRight | Qt::AlignTop,
                   QString("L%1").arg(layer));
      }
    }
  }

 private:
  StepAttention a_;
};

namespace {

QTableWidget* make_table(QWidget* parent, const QStringList& headers, const char* name) {
  auto* t = new QTableWidget(parent);
  t->setObjectName(name);
  t->setColumnCount(int(headers.size()));
  t->setHorizontalHeaderLabels(headers);
  t->verticalHeader()->setVisible(false);
  t->setEditTriggers(QAbstractItemView::NoEditTriggers);
  t->setSelectionBehavior(QAbstractItemView::SelectRows);
  t->setSelectionMode(QAbstractItemView::SingleSelection);
  t->horizontalHeader()->setStretchLastSection(true);
  t->setWordWrap(false);
  t->verticalHeader()->setDefaultSectionSize(t->fontMetrics().height() + 6);
  return t;
}

QTableWidgetItem* cell(const QString& text, Qt::Alignment align = Qt::AlignRight | Qt::AlignVCenter) {
  auto* it = new QTableWidgetItem(text);
  it->setTextAlignment(align);
  return it;
}

QString num(double v, int prec = 4) { return QString::number(v, 'f', prec); }

QString quoted(const std::string& piece) {
  QString s = QString::fromStdString(piece);
  s.replace('\n', "\\n");
  s.replace('\t', "\\t");
  return "'" + s + "'";
}

}  // namespace

StepInspectorView::StepInspectorView(QWidget* parent)
    : QWidget(parent),
      title_(new QLabel(this)),
      tabs_(new QTabWidget(this)),
      sampler_(make_table(this, {tr("Rank"), tr("Token"), tr("Piece"), tr("Logit"), tr("Penalized"), tr("p (T=1)"),
                                 tr("p (T)"), tr("p final"), tr("Removed by")},
                          "inspector_sampler")),
      lens_(make_table(this, {tr("Layer"), tr("Rank of chosen"), tr("p chosen"), tr("|x|"), tr("|attn|"), tr("|ffn|"),
                              tr("Top tokens")},
                       "inspector_lens")),
      attention_(new AttentionRowsChart(this)),
      attention_note_(new QLabel(this)),
      time_(make_table(this, {tr("Op"), tr("Calls"), tr("ms"), tr("Share")}, "inspector_time")),
      time_note_(new QLabel(this)),
      fork_(new QPushButton(tr("Fork from this candidate"), this)) {
  setObjectName("step_inspector");
  title_->setObjectName("inspector_title");
  title_->setWordWrap(true);
  title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  fork_->setObjectName("inspector_fork");
  fork_->setToolTip(tr("Continue from the selected candidate as a new branch (the prefix cache keeps the context)"));
  attention_note_->setWordWrap(true);
  time_note_->setWordWrap(true);

  auto* sampler_page = new QWidget(this);
  auto* sl = new QVBoxLayout(sampler_page);
  sl->setContentsMargins(0, 0, 0, 0);
  sl->addWidget(sampler_);
  auto* fork_row = new QHBoxLayout;
  fork_row->addStretch(1);
  fork_row->addWidget(fork_);
  sl->addLayout(fork_row);
  auto* attention_page = new QWidget(this);
  auto* al = new QVBoxLayout(attention_page);
  al->setContentsMargins(0, 0, 0, 0);
  al->addWidget(attention_, 1);
  al->addWidget(attention_note_);
  auto* time_page = new QWidget(this);
  auto* tl = new QVBoxLayout(time_page);
  tl->setContentsMargins(0, 0, 0, 0);
  tl->addWidget(time_, 1);
  tl->addWidget(time_note_);
  tabs_->addTab(sampler_page, tr("Sampler"));
  tabs_->addTab(lens_, tr("Logit lens"));
  tabs_->addTab(attention_page, tr("Attention"));
  tabs_->addTab(time_page, tr("Time"));

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(title_);
  layout->addWidget(tabs_, 1);
  connect(sampler_, &QTableWidget::itemSelectionChanged, this, &StepInspectorView::update_fork);
  connect(fork_, &QPushButton::clicked, this, [this] {
    const int row = sampler_->currentRow();
    if (!has_step() || row < 0 || row >= int(step_.sampler.candidates.size())) return;
    std::vector<int> ids = step_.context;
    const int token = step_.sampler.candidates[size_t(row)].token;
    ids.push_back(token);
    emit fork_requested(ids, index_, token);
  });
  clear();
}

void StepInspectorView::clear() {
  index_ = -1;
  step_ = {};
  sampler_->setRowCount(0);
  lens_->setRowCount(0);
  time_->setRowCount(0);
  attention_->set({});
  attention_note_->clear();
  time_note_->clear();
  show_message(tr("Click a generated token to see its step: the sampler's stages, the logit lens, attention and time."));
  update_fork();
  emit blocks_read({});
}

void StepInspectorView::show_message(const QString& text) { title_->setText(text); }

QString StepInspectorView::summary() const {
  if (!has_step()) return {};
  const SamplerTrace& t = step_.sampler;
  std::string piece;
  for (const SamplerCandidate& c : t.candidates)
    if (c.token == t.chosen) piece = c.piece;
  QString s = tr("Token %1 %2 (id %3) at position %4: rank %5, p %6")
                  .arg(index_ + 1)
                  .arg(quoted(piece))
                  .arg(t.chosen)
                  .arg(step_.position + 1)
                  .arg(t.chosen_rank)
                  .arg(num(t.chosen_prob));
  if (t.greedy) s += tr(" · greedy");
  else s += tr(" · draw u = %1, landing after %2 of the kept mass").arg(num(t.draw, 4)).arg(num(t.draw_cdf_before, 4));
  s += tr(" · stages: %1").arg(QString::fromStdString([&] {
    std::string j;
    for (const auto& st : t.stages) j += (j.empty() ? "" : " → ") + st;
    return j;
  }()));
  return s;
}

void StepInspectorView::show_step(int index, const StepInspection& step) {
  index_ = index;
  step_ = step;
  title_->setText(summary());
  fill_sampler();
  fill_lens();
  attention_->set(step_.attention);
  QStringList blocks;
  for (int b : step_.attention.blocks_read) blocks << QString::number(b);
  attention_note_->setText(tr("%1 layers × %2 heads over positions 1–%3 (each row scaled to its maximum). KV blocks read: %4")
                               .arg(step_.attention.n_layers)
                               .arg(step_.attention.n_heads)
                               .arg(step_.attention.position + 1)
                               .arg(blocks.join(", ")));
  fill_time();
  update_fork();
  emit blocks_read(step_.attention.blocks_read);
}

void StepInspectorView::fill_sampler() {
  const SamplerTrace& t = step_.sampler;
  sampler_->setRowCount(int(t.candidates.size()));
  const QColor removed = palette().color(QPalette::Disabled, QPalette::Text);
  for (int r = 0; r < int(t.candidates.size()); ++r) {
    const SamplerCandidate& c = t.candidates[size_t(r)];
    QTableWidgetItem* items[] = {cell(QString::number(c.rank)),
                                 cell(QString::number(c.token)),
                                 cell(quoted(c.piece), Qt::AlignLeft | Qt::AlignVCenter),
                                 cell(num(c.logit, 3)),
                                 cell(c.penalized ? num(c.logit_penalized, 3) : QString("–")),
                                 cell(num(c.prob_raw)),
                                 cell(num(c.prob_temperature)),
                                 cell(num(c.prob_final)),
                                 cell(QString::fromUtf8(to_string(c.removed_by)), Qt::AlignLeft | Qt::AlignVCenter)};
    for (int col = 0; col < 9; ++col) {
      QTableWidgetItem* it = items[col];
      if (c.token == t.chosen) {
        QFont f = it->font();
        f.setBold(true);
        it->setFont(f);
        it->setBackground(palette().color(QPalette::Highlight).lighter(170));
      } else if (c.removed_by != SamplerStage::None) {
        it->setForeground(removed);
      }
      sampler_->setItem(r, col, it);
    }
  }
  sampler_->resizeColumnsToContents();
}

void StepInspectorView::fill_lens() {
  lens_->setRowCount(int(step_.lens.size()));
  const QColor hot = palette().color(QPalette::Highlight);
  for (int r = 0; r < int(step_.lens.size()); ++r) {
    const LensLayer& l = step_.lens[size_t(r)];
    QStringList top;
    for (const LensToken& t : l.top) top << QString("%1 %2").arg(quoted(t.piece)).arg(num(t.prob, 3));
    QTableWidgetItem* rank = cell(QString::number(l.chosen_rank));
    QColor shade = hot;
    shade.setAlphaF(std::clamp(1.0 - std::log10(1.0 + l.chosen_rank) / 3.0, 0.1, 1.0));
    rank->setBackground(shade);
    lens_->setItem(r, 0, cell(QString::number(l.layer)));
    lens_->setItem(r, 1, rank);
    lens_->setItem(r, 2, cell(num(l.chosen_prob)));
    lens_->setItem(r, 3, cell(num(l.residual_norm, 2)));
    lens_->setItem(r, 4, cell(num(l.attention_norm, 2)));
    lens_->setItem(r, 5, cell(num(l.ffn_norm, 2)));
    lens_->setItem(r, 6, cell(top.join("  "), Qt::AlignLeft | Qt::AlignVCenter));
  }
  lens_->resizeColumnsToContents();
}

void StepInspectorView::fill_time() {
  // Per op over all layers, then per layer.
  std::map<std::string, std::pair<double, int>> by_op;
  std::map<int, double> by_layer;
  double total = 0;
  for (const OpTime& o : step_.timing.ops) {
    by_op[o.op].first += o.seconds;
    by_op[o.op].second += o.calls;
    by_layer[o.layer] += o.seconds;
    total += o.seconds;
  }
  time_->setRowCount(int(by_op.size() + by_layer.size()));
  int r = 0;
  for (const auto& [op, v] : by_op) {
    time_->setItem(r, 0, cell(QString::fromStdString(op), Qt::AlignLeft | Qt::AlignVCenter));
    time_->setItem(r, 1, cell(QString::number(v.second)));
    time_->setItem(r, 2, cell(num(v.first * 1e3, 3)));
    time_->setItem(r, 3, cell(total > 0 ? QString("%1 %").arg(100 * v.first / total, 0, 'f', 1) : "–"));
    ++r;
  }
  for (const auto& [layer, sec] : by_layer) {
    time_->setItem(r, 0, cell(layer < 0 ? tr("outside the layers") : tr("layer %1").arg(layer), Qt::AlignLeft | Qt::AlignVCenter));
    time_->setItem(r, 1, cell(""));
    time_->setItem(r, 2, cell(num(sec * 1e3, 3)));
    time_->setItem(r, 3, cell(total > 0 ? QString("%1 %").arg(100 * sec / total, 0, 'f', 1) : "–"));
    ++r;
  }
  const StepTiming& t = step_.timing;
  const double s = std::max(t.forward_seconds, 1e-12);
  time_note_->setText(tr("The recorded pass took %1 ms on %2. It reads %3 MB of weights and %4 MB of K/V (%5 GB/s "
                         "achieved) and computes %6 MFLOP (%7 GFLOP/s); compare with the machine's ceilings from "
                         "llmwb-cli roofline.")
                          .arg(num(t.forward_seconds * 1e3, 3))
                          .arg(QString::fromStdString(step_.runner))
                          .arg(num(t.weight_bytes / 1e6, 2))
                          .arg(num(t.kv_bytes / 1e6, 3))
                          .arg(num((t.weight_bytes + t.kv_bytes) / s / 1e9, 2))
                          .arg(num(t.flops / 1e6, 2))
                          .arg(num(t.flops / s / 1e9, 2)));
  time_->resizeColumnsToContents();
}

void StepInspectorView::update_fork() {
  const int row = sampler_->currentRow();
  fork_->setEnabled(has_step() && row >= 0 && row < int(step_.sampler.candidates.size()));
}

}  // namespace llmwb::ui
