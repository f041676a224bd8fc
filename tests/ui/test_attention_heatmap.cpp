// The attention heatmap draws each new snapshot on its live layer alone: the map shows the new
// weights (checked cell by cell and on screen), the token labels follow the snapshot, the key
// axis grows in chunks, and the cached layers are replotted only when the layout must change
// (a label outgrowing its margin, a restyle). The head selector picks the head or the mean.
// Last, the same with the real engine streaming a generation into the application's view.
#include <QPlainTextEdit>
#include <QTest>

#include <qcustomplot.h>

#include <cmath>

#include "attention_heatmap.h"
#include "completion_view.h"
#include "live_plot.h"
#include "sampling_params_editor.h"
#include "ui_test_support.h"

using namespace llmwb;

namespace {

constexpr int kHeads = 4;

// Token i of the vocabulary is "t<i>" padded to four characters, so that labels of different
// tokens are about as wide.
QStringList vocabulary() {
  QStringList v;
  for (int i = 0; i < 100; ++i) v << QString("t%1").arg(i, 3, 10, QChar('0'));
  v << "an-unusually-long-token-text";  // id 100
  return v;
}

// A snapshot of the last `nq` queries of a context of `nk` tokens (token ids k % 100), with
// weights that differ by query, head, key and `salt`, each query's row summing to 1 over its
// causal keys and zero past them.
std::shared_ptr<AttentionSnapshot> snapshot(int nk, int nq, int salt) {
  auto s = std::make_shared<AttentionSnapshot>();
  s->request_id = 7;
  s->layer = 1;
  s->n_heads = kHeads;
  s->context_len = nk;
  for (int k = 0; k < nk; ++k) s->context_tokens.push_back(k % 100);
  for (int q = 0; q < nq; ++q) s->query_positions.push_back(nk - nq + q);
  s->weights.assign(size_t(nq) * kHeads * nk, 0.0f);
  for (int q = 0; q < nq; ++q) {
    const int pos = s->query_positions[size_t(q)];
    for (int h = 0; h < kHeads; ++h) {
      float* row = &s->weights[(size_t(q) * kHeads + h) * nk];
      double sum = 0;
      for (int k = 0; k <= pos; ++k) sum += row[k] = float(1.0 + std::sin(0.7 * k + 1.3 * h + 0.37 * q + salt));
      for (int k = 0; k <= pos; ++k) row[k] = float(row[k] / sum);
    }
  }
  return s;
}

// What the view should show for (query q, key k): one head's weight or the mean over heads.
double expected(const AttentionSnapshot& s, int q, int k, int head) {
  const auto w = [&](int h) { return double(s.weights[(size_t(q) * s.n_heads + h) * s.context_len + k]); };
  if (head >= 0) return w(head);
  double sum = 0;
  for (int h = 0; h < s.n_heads; ++h) sum += w(h);
  return sum / s.n_heads;
}

}  // namespace

class TestAttentionHeatmap : public QObject {
  Q_OBJECT

 private:
  std::unique_ptr<ui::AttentionHeatmap> view_;

  ui::AttentionHeatmap& view() { return *view_; }

  // Hands `s` to the view and waits for the draw that shows it.
  bool show(std::shared_ptr<AttentionSnapshot> s) {
    const long before = view().draw_count();
    view().set_snapshot(std::move(s));
    return QTest::qWaitFor([&] { return view().draw_count() > before; }, 5000);
  }

  // Every cell of the map against the snapshot, the keys past the context zero.
  void check_cells(const AttentionSnapshot& s, int head) {
    QCPColorMapData* data = view().color_map()->data();
    const int nq = int(s.query_positions.size());
    QCOMPARE(data->valueSize(), nq);
    QCOMPARE(data->keySize(), view().shown_keys());
    for (int q = 0; q < nq; ++q) {
      for (int k = 0; k < s.context_len; ++k)
        QVERIFY2(std::abs(data->cell(k, q) - expected(s, q, k, head)) < 1e-6,
                 qPrintable(QString("cell key %1 query %2 head %3").arg(k).arg(q).arg(head)));
      for (int k = s.context_len; k < view().shown_keys(); ++k) QCOMPARE(data->cell(k, q), 0.0);
    }
  }

  // The colour on screen at the centre of cell (k, q) is the gradient's colour of its weight:
  // what the widget shows is the live layer drawn for this snapshot.
  void check_pixels(const AttentionSnapshot& s, int head) {
    const QImage image = view().live_plot()->grab().toImage();
    QCPColorMap* map = view().color_map();
    QCustomPlot* plot = view().live_plot();
    int distinct = 0;
    QColor last;
    for (int q : {0, int(s.query_positions.size()) - 1}) {
      for (int k : {0, s.context_len / 2, s.context_len - 1}) {
        const QColor want = QColor::fromRgba(map->gradient().color(expected(s, q, k, head), map->dataRange()));
        const QPoint at(int(plot->xAxis->coordToPixel(k)), int(plot->yAxis->coordToPixel(q)));
        const QColor got = image.pixelColor(at);
        QVERIFY2(std::abs(got.red() - want.red()) <= 2 && std::abs(got.green() - want.green()) <= 2 &&
                     std::abs(got.blue() - want.blue()) <= 2,
                 qPrintable(QString("pixel of key %1 query %2: %3, want %4").arg(k).arg(q).arg(got.name(), want.name())));
        distinct += got != last;
        last = got;
      }
    }
    QVERIFY(distinct > 2);  // the cells checked are not all one colour
  }

  QStringList query_ticks() {
    QStringList labels;
    for (const QString& l : view().live_plot()->yAxis->tickVectorLabels()) labels << l;
    return labels;
  }

  QStringList key_ticks() {
    QStringList labels;
    for (const QString& l : view().live_plot()->xAxis->tickVectorLabels()) labels << l;
    return labels;
  }

 private slots:
  void init() {
    view_ = std::make_unique<ui::AttentionHeatmap>();
    view().resize(1200, 420);
    view().show();
    QVERIFY(QTest::qWaitForWindowExposed(view_.get()));
    view().set_model(2, kHeads, vocabulary());
  }

  void cleanup() { view_.reset(); }

  void data_only_update_redraws_the_live_layer_alone() {
    auto first = snapshot(66, 8, 0);
    QVERIFY(show(first));
    QTest::qWait(100);  // the layout settles (a resize replots once more)
    QCOMPARE(view().shown_keys(), 70);  // 66 keys in chunks of 5
    check_cells(*first, -1);
    const long replots = view().full_replots();
    const QStringList keys = key_ticks();

    // The same context, new weights (another step's).
    auto second = snapshot(66, 8, 1);
    QVERIFY(show(second));
    QCOMPARE(view().full_replots(), replots);
    check_cells(*second, -1);
    check_pixels(*second, -1);

    // The next token: the queries slide by one, the context grows within its chunk. Still no
    // full replot, yet the query labels name the new rows and a key label the new token.
    auto third = snapshot(67, 8, 2);
    QVERIFY(show(third));
    QCOMPARE(view().full_replots(), replots);
    QCOMPARE(view().shown_keys(), 70);
    check_cells(*third, -1);
    check_pixels(*third, -1);
    QVERIFY(query_ticks().contains("t066 66"));
    QVERIFY(!query_ticks().contains("t058 58"));
    QVERIFY(key_ticks().size() >= keys.size());
    QVERIFY(key_ticks().contains("t066"));
  }

  void context_crossing_a_chunk_steps_the_key_axis() {
    QVERIFY(show(snapshot(70, 8, 0)));
    QCOMPARE(view().shown_keys(), 70);
    QCOMPARE(view().live_plot()->xAxis->range(), QCPRange(-0.5, 69.5));
    QVERIFY(!key_ticks().contains("t070"));
    auto next = snapshot(71, 8, 1);
    QVERIFY(show(next));
    QCOMPARE(view().shown_keys(), 75);
    QCOMPARE(view().live_plot()->xAxis->range(), QCPRange(-0.5, 74.5));
    QVERIFY(key_ticks().contains("t070"));
    check_cells(*next, -1);
    check_pixels(*next, -1);
    // A long context labels every n-th key, as the width allows, and only keys that exist.
    auto longer = snapshot(150, 8, 2);
    QVERIFY(show(longer));
    QCOMPARE(view().shown_keys(), 150);
    const QVector<double> ticks = view().live_plot()->xAxis->tickVector();
    QVERIFY(ticks.size() < 150);
    QVERIFY(ticks.size() * 14 <= view().live_plot()->axisRect()->width() + 14);
    for (double k : ticks) QVERIFY(k < 150);
  }

  void head_selector_shows_one_head_or_the_mean() {
    auto s = snapshot(40, 12, 3);
    QVERIFY(show(s));
    check_cells(*s, -1);
    for (int head : {2, 0, 3, -1}) {
      const long before = view().draw_count();
      view().set_head(head);
      QVERIFY(QTest::qWaitFor([&] { return view().draw_count() > before; }, 5000));
      QCOMPARE(view().head(), head);
      check_cells(*s, head);
      check_pixels(*s, head);
    }
  }

  void label_outgrowing_its_margin_lays_the_plot_out_again() {
    QVERIFY(show(snapshot(30, 6, 0)));
    QTest::qWait(100);
    const long replots = view().full_replots();
    const int margin = view().live_plot()->axisRect()->margins().left();
    auto s = snapshot(31, 6, 1);
    s->context_tokens[28] = 100;  // the long token, a query
    QVERIFY(show(s));
    QVERIFY(query_ticks().contains(QString("an-unusually-long-token-text 28")));
    QVERIFY(view().full_replots() > replots);
    QVERIFY(view().live_plot()->axisRect()->margins().left() > margin);
  }

  void palette_change_restyles_axes_and_replots() {
    QVERIFY(show(snapshot(20, 5, 0)));
    QTest::qWait(100);
    const long replots = view().full_replots();
    QPalette dark = view().palette();
    dark.setColor(QPalette::Base, QColor(30, 30, 30));
    dark.setColor(QPalette::Text, QColor(230, 230, 230));
    view().setPalette(dark);
    QVERIFY(QTest::qWaitFor([&] { return view().full_replots() > replots; }, 5000));
    QCOMPARE(view().live_plot()->xAxis->tickLabelColor(), QColor(230, 230, 230));
    QCOMPARE(view().live_plot()->yAxis->tickLabelColor(), QColor(230, 230, 230));
    QCOMPARE(view().color_map()->colorScale()->axis()->tickLabelColor(), QColor(230, 230, 230));
  }

  void real_generation_draws_mostly_the_live_layer() {
    view_.reset();
    auto bench = uitest::start_application(ui::MainWindow::View::Attention);
    ui::MainWindow& w = bench->window();
    QVERIFY(uitest::open_model_and_wait(w, uitest::stories_gguf()));
    ui::AttentionHeatmap* heatmap = w.attention_heatmap();
    QVERIFY(heatmap->on_screen());
    emit w.step_delay_requested(30);  // slow motion: the generation spans many frames
    ui::CompletionView* c = w.completion_view();
    c->prompt_editor()->setPlainText("Once upon a time");
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    greedy.max_tokens = 100;
    c->sampling()->set_params(greedy);
    QTest::qWait(100);
    const long draws = heatmap->draw_count(), replots = heatmap->full_replots();
    c->generate();
    QVERIFY(QTest::qWaitFor([c] { return !c->is_generating(); }, 120000));
    emit w.step_delay_requested(0);
    QTest::qWait(100);  // the last frame drawn
    const long drawn = heatmap->draw_count() - draws, replotted = heatmap->full_replots() - replots;
    qInfo("%ld draws, %ld full replots", drawn, replotted);
    QVERIFY2(drawn >= 20, qPrintable(QString("%1 draws").arg(drawn)));
    // Full replots only while labels outgrow their margins (a few, early): not once a frame.
    QVERIFY2(replotted * 4 <= drawn, qPrintable(QString("%1 full replots in %2 draws").arg(replotted).arg(drawn)));
    const auto s = heatmap->snapshot();
    QVERIFY(s && s->context_len > 100 && s->n_heads > 1);
    QCOMPARE(heatmap->shown_keys() >= s->context_len, true);
    // The engine's last snapshot, shown: the mean over heads, then one head.
    QCPColorMapData* data = heatmap->color_map()->data();
    for (int head : {-1, 1}) {
      const long before = heatmap->draw_count();
      heatmap->set_head(head);
      if (head != -1) QVERIFY(QTest::qWaitFor([&] { return heatmap->draw_count() > before; }, 5000));
      for (int q = 0; q < int(s->query_positions.size()); ++q)
        for (int k = 0; k < s->context_len; ++k)
          QVERIFY(std::abs(data->cell(k, q) - expected(*s, q, k, head)) < 1e-6);
    }
  }
};

QTEST_MAIN(TestAttentionHeatmap)
#include "test_attention_heatmap.moc"
