// The Parallelism view and Settings ▸ Parallelism: the sizes persist and reach the engine
// config; a layout the loaded model cannot run is refused inline (OK disabled) instead of
// failing a load; a real TP 2 x PP 2 generation on stories260K through the GUI draws a lane per
// rank and measures the analytic all-reduce and stage hand-off volume; recorded intervals
// (micro-batches, all-reduce, send / receive) are drawn where their times say; one rank shows
// the explanatory empty state; a view tabbed away draws nothing until raised.
#include <QComboBox>
#include <QDockWidget>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTableWidget>
#include <QTest>

#include <qcustomplot.h>

#include <cmath>
#include <set>

#include "app_settings.h"
#include "completion_view.h"
#include "live_plot.h"
#include "parallelism_view.h"
#include "sampling_params_editor.h"
#include "settings_dialog.h"
#include "ui_test_support.h"

using namespace llmwb;
using Kind = RankSpan::Kind;

namespace {

ModelInfo stories_shape() {
  ModelInfo m;   // stories260K's: 5 layers, dim 64, 8 heads, 4 KV heads
  m.n_layers = 5;
  m.dim = 64;
  m.n_heads = 8;
  m.n_kv_heads = 4;
  return m;
}

RankSpan span(Kind kind, double begin_ms, double end_ms, int micro_batch, uint64_t bytes = 0) {
  RankSpan s;
  s.kind = kind;
  s.begin = float(begin_ms / 1000.0);
  s.end = float(end_ms / 1000.0);
  s.micro_batch = micro_batch;
  s.bytes = bytes;
  return s;
}

// One decode step of `tokens` tokens on a TP 2 x PP 2 layout, 10 ms of forward pass ending at
// `end` seconds. Stage 0 computes micro-batches 0 and 1 (an all-reduce after each) and sends
// each; stage 1 waits for micro-batch 0 (its bubble), then computes both. All times in ms from
// the forward's start.
ui::StepRecord pipelined_step(quint64 step, double end, int tokens) {
  ui::StepRecord s;
  s.step = step;
  s.time = end;
  s.step_seconds = 0.010;
  s.forward_seconds = 0.010;
  s.num_decode_tokens = tokens;
  s.num_decode_seqs = tokens;
  auto ranks = std::make_shared<std::vector<RankTelemetry>>();
  for (int p = 0; p < 2; ++p)
    for (int t = 0; t < 2; ++t) {
      RankTelemetry r;
      r.tp_rank = t;
      r.pp_stage = p;
      r.micro_batches = 2;
      r.step_seconds = 0.010;
      if (p == 0) {
        r.spans = {span(Kind::Compute, 0, 2, 0), span(Kind::AllReduce, 2, 3, 0, 512), span(Kind::Send, 3, 3.2, 0, 256),
                   span(Kind::Compute, 3.2, 5.2, 1), span(Kind::AllReduce, 5.2, 6.2, 1, 512),
                   span(Kind::Send, 6.2, 6.4, 1, 256)};
        // idle from 6.4 to 10: the drain
      } else {
        r.spans = {span(Kind::Recv, 0, 3.2, 0, 256), span(Kind::Compute, 3.2, 5.2, 0),
                   span(Kind::AllReduce, 5.2, 6.2, 0, 512), span(Kind::Recv, 6.2, 6.4, 1, 256),
                   span(Kind::Compute, 6.4, 8.4, 1), span(Kind::AllReduce, 8.4, 9.4, 1, 512)};
      }
      r.compute_seconds = 0.004;
      r.allreduce_seconds = 0.002;
      r.recv_seconds = p == 1 ? 0.0034 : 0.0;
      r.allreduce_bytes = 1024;
      r.sendrecv_bytes = 512;
      ranks->push_back(r);
    }
  s.ranks = ranks;
  return s;
}

// Whether the lanes plot shows `colour` (within a tolerance) at plot coordinates (ms, lane y).
bool shows_colour(ui::LivePlot* plot, double ms, double y, const QColor& colour) {
  const QImage image = plot->toPixmap(plot->width(), plot->height(), 1.0).toImage();
  const int px = int(std::lround(plot->xAxis->coordToPixel(ms)));
  const int py = int(std::lround(plot->yAxis->coordToPixel(y)));
  for (int dy = -3; dy <= 3; ++dy) {
    const QColor c = image.pixelColor(px, py + dy);
    if (std::abs(c.red() - colour.red()) < 30 && std::abs(c.green() - colour.green()) < 30 &&
        std::abs(c.blue() - colour.blue()) < 30)
      return true;
  }
  return false;
}

}  // namespace

class TestParallelismView : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { uitest::isolate_user_data(); }

  void settings_round_trip_the_parallel_sizes_into_the_engine_config() {
    ui::AppSettings s;
    s.tensor_parallel_size = 2;
    s.pipeline_parallel_size = 3;
    s.save();
    const ui::AppSettings loaded = ui::AppSettings::load();
    QCOMPARE(loaded.tensor_parallel_size, 2);
    QCOMPARE(loaded.pipeline_parallel_size, 3);
    ui::SettingsDialog d(loaded);
    QCOMPARE(d.tensor_parallel_box()->value(), 2);
    QCOMPARE(d.pipeline_parallel_box()->value(), 3);
    d.tensor_parallel_box()->setValue(4);
    d.pipeline_parallel_box()->setValue(1);
    const EngineConfig c = d.settings().engine_config("m.gguf", "");
    QCOMPARE(c.tensor_parallel_size, 4);
    QCOMPARE(c.pipeline_parallel_size, 1);
    QCOMPARE(c.dist, std::string("threads"));
    // MPI is listed but cannot be chosen in the GUI, and says why.
    auto* model = qobject_cast<QStandardItemModel*>(d.dist_box()->model());
    QVERIFY(model);
    QCOMPARE(d.dist_box()->currentData().toString(), QString("threads"));
    QVERIFY(!model->item(1)->isEnabled());
    QVERIFY(d.dist_box()->itemData(1, Qt::ToolTipRole).toString().contains("mpirun"));
    ui::AppSettings().save();
  }

  void a_layout_the_model_cannot_run_is_refused_inline() {
    ui::SettingsDialog d(ui::AppSettings{});
    d.set_model(stories_shape());
    d.show();
    QVERIFY(QTest::qWaitForWindowExposed(&d));
    QVERIFY(d.parallel_error().isEmpty());
    QVERIFY(d.ok_button()->isEnabled());
    QVERIFY(!d.parallel_error_label()->isVisible());
    d.tensor_parallel_box()->setValue(3);   // 4 KV heads
    QVERIFY(d.parallel_error_label()->isVisible());
    QVERIFY2(d.parallel_error_label()->text().contains("tensor_parallel_size: 3 does not divide the model's 4 KV heads"),
             qPrintable(d.parallel_error_label()->text()));
    QVERIFY(!d.ok_button()->isEnabled());
    d.accept();   // refused: the dialog stays open
    QCOMPARE(d.result(), int(QDialog::Rejected));
    QVERIFY(d.isVisible());
    d.tensor_parallel_box()->setValue(2);
    d.pipeline_parallel_box()->setValue(6);   // 5 layers
    QVERIFY(d.parallel_error_label()->text().contains("pipeline_parallel_size: 6 stages for the model's 5 layers"));
    QVERIFY(!d.ok_button()->isEnabled());
    d.pipeline_parallel_box()->setValue(2);
    QVERIFY(d.parallel_error().isEmpty());
    QVERIFY(d.ok_button()->isEnabled());
    // The early-exit draft runs on one stage only.
    d.speculative_box()->setCurrentText("layers:2");
    QVERIFY(d.parallel_error().contains("layers:K"));
    d.speculative_box()->setCurrentText("off");
    QVERIFY(d.parallel_error().isEmpty());
  }

  void one_rank_shows_how_to_run_with_more() {
    ui::ParallelismView v;
    v.resize(900, 500);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    QVERIFY(v.empty_state_shown());
    v.set_layout(1, 1, stories_shape());
    QVERIFY(v.empty_state_shown());
    QVERIFY(v.empty_label()->text().contains("Settings ▸ Parallelism"));
    bool asked = false;
    connect(&v, &ui::ParallelismView::settings_requested, &v, [&asked] { asked = true; });
    QTest::mouseClick(v.settings_button(), Qt::LeftButton);
    QVERIFY(asked);
    v.set_layout(2, 1, stories_shape());
    QVERIFY(!v.empty_state_shown());
  }

  void recorded_intervals_are_drawn_where_their_times_say() {
    ui::ParallelismView v;
    v.resize(1200, 600);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    v.set_layout(2, 2, stories_shape());
    v.set_steps_shown(1);
    ui::TelemetryFrame f;
    f.steps.push_back(pipelined_step(7, 1.0, 2));
    const long drawn = v.draw_count();
    v.add_frame(f);
    QVERIFY(QTest::qWaitFor([&] { return v.draw_count() > drawn; }, 5000));
    QCOMPARE(v.lanes(), 4);
    QCOMPARE(v.steps_shown(), 1);
    // Every span of every rank became one segment on its lane, at its time before the step's end.
    QCOMPARE(int(v.segments().size()), 4 * 6);
    std::set<int> lanes;
    for (const auto& g : v.segments()) {
      lanes.insert(g.lane);
      QVERIFY(!g.from_totals);
      QVERIFY(g.begin_ms >= -10.0 - 1e-3 && g.end_ms <= 1e-3);
    }
    QCOMPARE(lanes, (std::set<int>{0, 1, 2, 3}));
    // The micro-batch labels: the computes and all-reduces wide enough (not the receives).
    QVERIFY2(v.micro_batch_labels() >= 8, qPrintable(QString::number(v.micro_batch_labels())));
    // Lane of stage 1 · tp 0 (lane 2, plotted at y = 4 - 1 - 2 = 1): waiting 0..3.2 ms, computing
    // micro-batch 0 at 3.2..5.2 (ms before the end: -6.8..-4.8), all-reduce -4.8..-3.8, computing
    // micro-batch 1 (lighter) at -3.6..-1.6.
    ui::LivePlot* plot = v.lanes_plot();
    const QColor compute = ui::ParallelismView::kind_color(Kind::Compute);
    const QColor allreduce = ui::ParallelismView::kind_color(Kind::AllReduce);
    QVERIFY(shows_colour(plot, -5.8, 1, compute));
    QVERIFY(shows_colour(plot, -4.3, 1, allreduce));
    QVERIFY(shows_colour(plot, -2.6, 1, compute.lighter(135)));
    QVERIFY(!shows_colour(plot, -2.6, 1, compute));
    // Stage 0 (y = 3 and 2) is idle from 6.4 ms on: nothing drawn at -2 ms.
    QVERIFY(!shows_colour(plot, -2.0, 3, compute) && !shows_colour(plot, -2.0, 3, compute.lighter(135)));
    QVERIFY(!shows_colour(plot, -2.0, 3, allreduce) && !shows_colour(plot, -2.0, 3, allreduce.lighter(135)));
    // Stage 0 computing micro-batch 0 at -10..-8.
    QVERIFY(shows_colour(plot, -9.0, 3, compute));
    // Shares over the 10 ms forward: stage 0 computes 4 ms, communicates 2.4 (all-reduce + send),
    // bubble 3.6; stage 1 computes 4, all-reduces 2, bubble 4 (waiting 3.4 + idle 0.6).
    const auto shares = v.shares();
    QCOMPARE(int(shares.size()), 4);
    QVERIFY(std::abs(shares[0].compute - 0.40) < 1e-3);
    QVERIFY(std::abs(shares[0].communication - 0.24) < 1e-3);
    QVERIFY(std::abs(shares[0].bubble - 0.36) < 1e-3);
    QVERIFY(std::abs(shares[2].communication - 0.20) < 1e-3);
    QVERIFY(std::abs(shares[2].bubble - 0.40) < 1e-3);
    // Drawn stacked, each lane's bar from 0 to 100 %: stage 0 · tp 0 (y = 3) computes to 40 %, then
    // communicates to 64 %; stage 1 · tp 1 (y = 0) communicates from 40 to 60 %.
    ui::LivePlot* bars = v.shares_plot();
    QVERIFY(shows_colour(bars, 20, 3, compute));
    QVERIFY(shows_colour(bars, 52, 3, allreduce));
    QVERIFY(!shows_colour(bars, 52, 3, compute));
    QVERIFY(shows_colour(bars, 50, 0, allreduce));
    QVERIFY(!shows_colour(bars, 70, 0, allreduce));
    // Volume per generated token (2 tokens): rank 0's all-reduces over both stages, 2 x 1024 / 2;
    // its chain's hand-off, (512 + 512) / 2 counted once / 2 tokens.
    QCOMPARE(v.measured_allreduce_per_token(), 1024.0);
    QCOMPARE(v.measured_stage_transfer_per_token(), 256.0);
    QCOMPARE(v.analytic_allreduce_per_token(), 2.0 * 5 * 64 * 4);
    QCOMPARE(v.analytic_stage_transfer_per_token(), 64.0 * 4);
    QVERIFY(v.caption().contains("step 7") && v.caption().contains("2 micro-batches"));
    // The tooltip names what is under the pointer.
    auto at = [plot](double ms, double y) {
      return QPoint(int(plot->xAxis->coordToPixel(ms)), int(plot->yAxis->coordToPixel(y)));
    };
    QCOMPARE(v.describe_at(at(-4.3, 1)), QString("stage 1 · tp 0 · step 7\nall-reduce, micro-batch 0: 1.000 ms, 512 B"));
    QVERIFY(v.describe_at(at(-2.0, 3)).endsWith("stage 0 · tp 0: idle"));
    // 4 ranks on 2 cores: the idle gaps are partly the machine's, and the caption says so.
    for (int cores : {2, 8}) {
      v.set_cpu_cores(cores);
      ui::TelemetryFrame again;
      again.steps.push_back(pipelined_step(8, 1.1, 2));
      const long before = v.draw_count();
      v.add_frame(again);
      QVERIFY(QTest::qWaitFor([&] { return v.draw_count() > before; }, 5000));
      QVERIFY2(v.caption().contains("4 ranks share 2 cores") == (cores == 2), qPrintable(v.caption()));
    }
  }

  void steps_are_drawn_back_to_back_with_the_time_between_them_cut() {
    ui::ParallelismView v;
    v.resize(1200, 600);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    v.set_layout(2, 2, stories_shape());
    v.set_steps_shown(2);
    // Two 10 ms steps half a second apart (slow motion): both fill the lanes, the older one from
    // -20 to -10 ms of forward time.
    ui::TelemetryFrame f;
    f.steps.push_back(pipelined_step(1, 1.0, 1));
    f.steps.push_back(pipelined_step(2, 1.5, 1));
    const long drawn = v.draw_count();
    v.add_frame(f);
    QVERIFY(QTest::qWaitFor([&] { return v.draw_count() > drawn; }, 5000));
    QCOMPARE(v.steps_shown(), 2);
    QCOMPARE(int(v.segments().size()), 2 * 4 * 6);
    double first = 0;
    for (const auto& g : v.segments()) first = std::min(first, g.begin_ms);
    QVERIFY(std::abs(first + 20.0) < 1e-3);
    // Stage 0 computes micro-batch 0 at the start of each step: -20..-18 and -10..-8.
    QVERIFY(shows_colour(v.lanes_plot(), -19.0, 3, ui::ParallelismView::kind_color(Kind::Compute)));
    QVERIFY(shows_colour(v.lanes_plot(), -9.0, 3, ui::ParallelismView::kind_color(Kind::Compute)));
    // The cut between them: a dashed line at -10 ms, between the lanes too.
    const QColor text = v.palette().color(QPalette::Text), base = v.lanes_plot()->palette().color(QPalette::Base);
    const double a = 150.0 / 255.0;
    const QColor ink(int(text.red() * a + base.red() * (1 - a)), int(text.green() * a + base.green() * (1 - a)),
                     int(text.blue() * a + base.blue() * (1 - a)));
    QVERIFY(shows_colour(v.lanes_plot(), -10.0, 1.5, ink));
    QVERIFY(!shows_colour(v.lanes_plot(), -5.0, 1.5, ink));
  }

  void per_rank_totals_are_drawn_when_no_intervals_were_recorded() {
    ui::ParallelismView v;
    v.resize(1000, 500);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    v.set_layout(2, 2, stories_shape());
    ui::StepRecord s = pipelined_step(3, 2.0, 1);
    auto ranks = std::make_shared<std::vector<RankTelemetry>>(*s.ranks);
    for (RankTelemetry& r : *ranks) r.spans.clear();
    s.ranks = ranks;
    ui::TelemetryFrame f;
    f.steps.push_back(s);
    const long drawn = v.draw_count();
    v.add_frame(f);
    QVERIFY(QTest::qWaitFor([&] { return v.draw_count() > drawn; }, 5000));
    // Stage 0: compute then all-reduce (no wait); stage 1: receive, compute, all-reduce.
    QCOMPARE(int(v.segments().size()), 2 * 2 + 2 * 3);
    for (const auto& g : v.segments()) QVERIFY(g.from_totals);
    QVERIFY(v.caption().contains("per-rank totals"));
    ui::LivePlot* plot = v.lanes_plot();
    // Stage 1 · tp 1 (lane 3, y = 0): receive 0..3.4 ms, compute 3.4..7.4 (-6.6..-2.6 before the end).
    QVERIFY(shows_colour(plot, -4.6, 0, ui::ParallelismView::kind_color(Kind::Compute)));
    QVERIFY(shows_colour(plot, -2.0, 0, ui::ParallelismView::kind_color(Kind::AllReduce)));
  }

  void a_tp2_pp2_generation_on_stories260k_draws_a_lane_per_rank() {
    auto bench = uitest::start_application(ui::MainWindow::View::Completion);
    ui::MainWindow& w = bench->window();
    ui::AppSettings s = w.settings();
    s.tensor_parallel_size = 2;
    s.pipeline_parallel_size = 2;
    s.threads = 1;
    w.set_settings(s);
    QVERIFY(uitest::open_model_and_wait(w, uitest::stories_gguf()));
    ui::ParallelismView* v = w.parallelism_view();
    w.show_view(ui::MainWindow::View::Parallelism);
    QVERIFY(!v->empty_state_shown());
    QCOMPARE(v->lanes(), 4);
    ui::CompletionView* c = w.completion_view();
    c->prompt_editor()->setPlainText("Once upon a time");
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    greedy.max_tokens = 24;
    c->sampling()->set_params(greedy);
    c->generate();
    QVERIFY(QTest::qWaitFor([c] { return !c->is_generating(); }, 120000));
    QVERIFY(c->last_finish_reason() != FinishReason::Error);
    QVERIFY(QTest::qWaitFor([v] { return v->steps_held() > 4 && !v->pacer().pending(); }, 10000));
    const long drawn = v->draw_count();
    QVERIFY(QTest::qWaitFor([&] { return v->draw_count() >= drawn && !v->segments().empty(); }, 5000));
    std::set<int> lanes;
    for (const auto& g : v->segments()) lanes.insert(g.lane);
    QCOMPARE(lanes, (std::set<int>{0, 1, 2, 3}));
    // Measured bytes per generated token equal the analytic figures: every TP rank all-reduces
    // 2 x 5 layers x 64 floats per token, each chain hands 64 floats over the one boundary.
    QCOMPARE(v->measured_allreduce_per_token(), v->analytic_allreduce_per_token());
    QCOMPARE(v->measured_allreduce_per_token(), 2.0 * 5 * 64 * 4);
    QCOMPARE(v->measured_stage_transfer_per_token(), 64.0 * 4);
    for (const auto& sh : v->shares()) {
      QVERIFY(sh.compute > 0);
      QVERIFY(std::abs(sh.compute + sh.communication + sh.bubble - 1.0) < 1e-9);
    }
    QCOMPARE(v->volume_table()->item(0, 0)->text(), QString("2.50 KiB"));
    QCOMPARE(v->volume_table()->item(0, 2)->text(), QString("2.50 KiB"));
    QCOMPARE(v->volume_table()->item(1, 2)->text(), QString("256 B"));
    QVERIFY2(v->volume_note().contains("2 × 5 layers × 64 × 4 B = 2.50 KiB"), qPrintable(v->volume_note()));
    // Back to one rank: the empty state.
    s.tensor_parallel_size = s.pipeline_parallel_size = 1;
    w.set_settings(s);
    QVERIFY(QTest::qWaitFor([&] { return !w.is_loading(); }, 120000) && w.is_model_loaded());
    QVERIFY(v->empty_state_shown());
  }

  void a_view_tabbed_away_draws_nothing_until_raised() {
    auto bench = uitest::start_application(ui::MainWindow::View::Completion);
    ui::MainWindow& w = bench->window();
    ui::ParallelismView* v = w.parallelism_view();
    v->set_layout(2, 2, stories_shape());
    w.show_view(ui::MainWindow::View::Parallelism);
    QVERIFY(QTest::qWaitFor([v] { return v->on_screen(); }, 5000));
    w.show_view(ui::MainWindow::View::Timeline);   // tabbed behind the timeline
    QVERIFY(QTest::qWaitFor([v] { return !v->on_screen(); }, 5000));
    QTest::qWait(50);
    const long before = v->draw_count();
    for (int i = 0; i < 20; ++i) {
      ui::TelemetryFrame f;
      f.steps.push_back(pipelined_step(quint64(i), 1.0 + 0.02 * i, 1));
      v->add_frame(f);
      QTest::qWait(10);
    }
    QCOMPARE(v->draw_count(), before);
    QVERIFY(v->segments().empty());
    w.show_view(ui::MainWindow::View::Parallelism);
    QVERIFY(QTest::qWaitFor([&] { return v->draw_count() > before; }, 5000));
    QTest::qWait(100);
    QCOMPARE(v->draw_count(), before + 1);   // once, with the newest data
    QCOMPARE(v->steps_held(), 20);
    QVERIFY(!v->segments().empty());
  }

  void cleanupTestCase() { QSettings().clear(); }
};

QTEST_MAIN(TestParallelismView)
#include "test_parallelism_view.moc"
