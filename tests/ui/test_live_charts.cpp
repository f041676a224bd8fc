// The live views while tokens stream: the throughput line breaks over idle time, charts draw
// no more often than their frame pacer allows, views tabbed away draw nothing (and the
// attention capture is off), and streaming never re-lays out the window or re-flows the
// token chips. No timings of speed here: tools/bench_gui_overhead.sh measures those.
#include <QDockWidget>
#include <QElapsedTimer>
#include <QPlainTextEdit>
#include <QTabBar>
#include <QTabWidget>
#include <QTest>
#include <QTimer>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

#include "attention_heatmap.h"
#include "chart_style.h"
#include "chat_view.h"
#include "conversation_store.h"
#include "completion_view.h"
#include "kv_block_map.h"
#include "live_plot.h"
#include "sampling_params_editor.h"
#include "throughput_chart.h"
#include "timeline_view.h"
#include "token_chips_view.h"
#include "ui_test_support.h"

using namespace llmwb;

namespace {

// Decode-only steps of `step_seconds` each, back to back from `start`.
ui::TelemetryFrame burst(double start, int steps, double step_seconds, quint64 first_step) {
  ui::TelemetryFrame f;
  for (int i = 0; i < steps; ++i) {
    ui::StepRecord s;
    s.step = first_step + quint64(i);
    s.time = start + (i + 1) * step_seconds;
    s.step_seconds = step_seconds;
    s.forward_seconds = step_seconds;
    s.num_decode_tokens = 1;
    s.num_decode_seqs = 1;
    f.steps.push_back(s);
  }
  return f;
}

// Counts events of one type reaching one object.
class EventCounter : public QObject {
 public:
  EventCounter(QObject* target, QEvent::Type type) : type_(type) { target->installEventFilter(this); }
  int count = 0;

 protected:
  bool eventFilter(QObject*, QEvent* e) override {
    if (e->type() == type_) ++count;
    return false;
  }

 private:
  QEvent::Type type_;
};

// Counts the draws of the layer it sits on (QCustomPlot draws every layerable of a layer
// whenever it redraws that layer's buffer).
class LayerDrawProbe : public QCPLayerable {
 public:
  LayerDrawProbe(QCustomPlot* plot, const QString& layer) : QCPLayerable(plot, layer) {}
  int draws = 0;

 protected:
  void applyDefaultAntialiasingHint(QCPPainter*) const override {}
  void draw(QCPPainter*) override { ++draws; }
};

// Whether any pixel in column x (within the plot's axis rect) has the colour of `series`.
bool column_has_colour(const QImage& image, int x, const QRect& area, const QColor& series) {
  for (int y = area.top(); y <= area.bottom(); ++y) {
    const QColor c = image.pixelColor(x, y);
    if (std::abs(c.red() - series.red()) < 40 && std::abs(c.green() - series.green()) < 40 &&
        std::abs(c.blue() - series.blue()) < 40)
      return true;
  }
  return false;
}

}  // namespace

class TestLiveCharts : public QObject {
  Q_OBJECT

 private:
  std::unique_ptr<gui::Workbench> bench_;

  ui::MainWindow& window() { return bench_->window(); }

  // A greedy generation through the Completion view, in slow motion so that it streams over
  // several frames; returns the number of token deltas the view received.
  int stream_generation(int max_tokens, int step_delay_ms) {
    ui::CompletionView* c = window().completion_view();
    int deltas = 0;
    QObject context;  // the connection ends with this function
    connect(&bench_->mailbox(), &gui::FrameMailbox::tokens, &context, [&deltas] { ++deltas; });
    emit window().step_delay_requested(step_delay_ms);
    c->prompt_editor()->setPlainText({});
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    greedy.max_tokens = max_tokens;
    c->sampling()->set_params(greedy);
    c->generate();
    const bool done = QTest::qWaitFor([c] { return !c->is_generating(); }, 120000);
    emit window().step_delay_requested(0);
    return done ? deltas : -1;
  }

 private slots:
  void initTestCase() {
    bench_ = uitest::start_application(ui::MainWindow::View::Completion);
    window().show_view(ui::MainWindow::View::Throughput);
    QVERIFY(uitest::open_model_and_wait(window(), uitest::stories_gguf()));
  }

  void cleanupTestCase() { bench_.reset(); }

  void throughput_line_breaks_over_an_idle_period() {
    ui::ThroughputChart chart;
    chart.resize(800, 300);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    // 1 s of steps at 100 tok/s, 5 s idle, 1 s more: 10 frames a burst.
    quint64 step = 0;
    for (int f = 0; f < 10; ++f, step += 10) chart.add_frame(burst(0.1 * f, 10, 0.01, step));
    for (int f = 0; f < 10; ++f, step += 10) chart.add_frame(burst(6.0 + 0.1 * f, 10, 0.01, step));
    QCOMPARE(chart.decode_gaps(), 1);
    QCOMPARE(chart.decode_points(), 20);

    // And on screen: no line in the middle of the idle time, a line in the middle of a burst.
    // (Shown again, a view that missed a paced draw draws at once.)
    chart.hide();
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    QCustomPlot* plot = chart.plot();
    const QImage image = plot->toPixmap(plot->width(), plot->height(), 1.0).toImage();
    const QRect area = plot->axisRect()->rect();
    const QColor line = ui::series_color(0);
    const int idle_x = int(plot->xAxis->coordToPixel(3.5));
    const int busy_x = int(plot->xAxis->coordToPixel(0.6));
    QVERIFY(column_has_colour(image, busy_x, area, line));
    QVERIFY2(!column_has_colour(image, idle_x, area, line), "the line crosses the idle period");
  }

  void a_steady_stream_has_no_breaks() {
    ui::ThroughputChart chart;
    quint64 step = 0;
    for (int f = 0; f < 40; ++f, step += 10) chart.add_frame(burst(0.1 * f, 10, 0.01, step));
    QCOMPARE(chart.decode_gaps(), 0);
    QCOMPARE(chart.decode_points(), 40);
  }

  void chart_draws_within_the_pacers_limit_while_frames_flood_in() {
    ui::ThroughputChart chart;
    chart.resize(800, 300);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    EventCounter paints(chart.plot(), QEvent::Paint);
    const long draws_before = chart.draw_count();
    // Frames ten times faster than the worker sends them, for a second.
    QElapsedTimer t;
    t.start();
    quint64 step = 0;
    double engine_time = 0.0;
    while (t.elapsed() < 1000) {
      chart.add_frame(burst(engine_time, 4, 0.001, step));
      engine_time += 0.004;
      step += 4;
      QTest::qWait(3);
    }
    const double seconds = double(t.elapsed()) / 1000.0;
    const long draws = chart.draw_count() - draws_before;
    // At most one draw per minimum interval, the screen's frame (plus the one allowed at once).
    QCOMPARE(chart.pacer().min_interval_ms(), ui::FramePacer::frame_interval_ms(chart.screen()));
    const long limit = long(seconds * 1000.0 / chart.pacer().min_interval_ms()) + 2;
    QVERIFY2(draws >= 1, "the chart never drew");
    QVERIFY2(draws <= limit, qPrintable(QString("%1 draws in %2 s, limit %3").arg(draws).arg(seconds).arg(limit)));
    QVERIFY2(paints.count <= limit, qPrintable(QString("%1 paints, limit %2").arg(paints.count).arg(limit)));
  }

  void every_draw_shows_the_newest_step() {
    ui::ThroughputChart chart;
    chart.resize(800, 300);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    QCustomPlot* plot = chart.plot();
    const QColor line = ui::series_color(0);
    quint64 step = 0;
    const long full_before = chart.full_replots(), draws_before = chart.draw_count();
    // 4 s of engine time at 100 tok/s, 10 frames a second: the time axis steps a few times,
    // most draws redraw the live layer alone; after each, what is on screen ends at the newest
    // step.
    for (int f = 0; f < 40; ++f, step += 10) {
      const long drawn = chart.draw_count();
      const ui::TelemetryFrame frame = burst(0.1 * f, 10, 0.01, step);
      chart.add_frame(frame);
      QVERIFY(QTest::qWaitFor([&] { return chart.draw_count() > drawn; }, 5000));
      const double newest = frame.steps.back().time;
      QCOMPARE(plot->graph(0)->dataCount(), f + 1);
      QCOMPARE((plot->graph(0)->data()->constEnd() - 1)->key, newest);
      QVERIFY2(plot->xAxis->range().contains(newest), qPrintable(QString("frame %1").arg(f)));
      if (f == 0) continue;  // one point draws no line
      // The widget as painted from its layer buffers (grab() replots nothing): the line reaches
      // the newest point's column.
      const QImage shown = plot->grab().toImage();
      const int x = int(plot->xAxis->coordToPixel(newest)) - 1;
      QVERIFY2(column_has_colour(shown, x, plot->axisRect()->rect(), line),
               qPrintable(QString("frame %1: no line at the newest point (x = %2)").arg(f).arg(x)));
    }
    const long full = chart.full_replots() - full_before, draws = chart.draw_count() - draws_before;
    QVERIFY2(full < draws / 2, qPrintable(QString("%1 of %2 draws replotted everything").arg(full).arg(draws)));
  }

  // The title's figures update at most 4 times a second, but a latency update (a first token,
  // a finish) comes just before its delivery's frame, and the draw after them must show both:
  // at a finish nothing follows to correct a stale title.
  void the_title_catches_up_with_the_last_frame() {
    ui::ThroughputChart chart;
    chart.resize(800, 300);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    chart.set_request_latency(0.005, -1);  // the first token of a delivery
    chart.add_frame(burst(0.0, 50, 0.002, 0));   // 500 tok/s, in the same delivery
    QCOMPARE(chart.last_decode_rate(), 500.0);
    QTRY_VERIFY2_WITH_TIMEOUT(chart.title_text().contains("decode 500 tok/s"), qPrintable(chart.title_text()), 2000);
    QVERIFY(chart.title_text().contains("TTFT 5.0 ms"));
  }

  void a_data_update_redraws_only_the_live_layer() {
    ui::ThroughputChart chart;
    chart.resize(800, 300);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    auto* axes = new LayerDrawProbe(chart.plot(), "axes");
    auto* live = new LayerDrawProbe(chart.plot(), chart.live_plot()->live_layer()->name());
    quint64 step = 0;
    auto add = [&](double start) {
      const long drawn = chart.draw_count();
      chart.add_frame(burst(start, 10, 0.01, step));
      step += 10;
      return QTest::qWaitFor([&] { return chart.draw_count() > drawn; }, 5000);
    };
    QVERIFY(add(0.0));
    QVERIFY(add(0.1));
    // New data inside the axis ranges: the live layer is redrawn, the cached one is not.
    const int axes_draws = axes->draws, live_draws = live->draws;
    const long full = chart.full_replots();
    QVERIFY(add(0.2));
    QCOMPARE(live->draws, live_draws + 1);
    QCOMPARE(axes->draws, axes_draws);
    QCOMPARE(chart.full_replots(), full);
    // Data beyond the time axis: the axis steps, everything is replotted.
    const double upper = chart.plot()->xAxis->range().upper;
    QVERIFY(add(upper + 0.5));
    QVERIFY(chart.plot()->xAxis->range().contains(upper + 0.6));
    QCOMPARE(axes->draws, axes_draws + 1);
    QCOMPARE(chart.full_replots(), full + 1);
  }

  void timeline_steps_redraw_only_the_bars() {
    ui::TimelineView timeline;
    timeline.resize(800, 400);
    timeline.show();
    QVERIFY(QTest::qWaitForWindowExposed(&timeline));
    quint64 step = 0;
    auto add = [&]() {
      const long drawn = timeline.draw_count();
      timeline.add_frame(burst(0.01 * double(step), 10, 0.01, step));
      step += 10;
      return QTest::qWaitFor([&] { return timeline.draw_count() > drawn; }, 5000);
    };
    // Probes first: a layerable joining a layer invalidates its buffer.
    ui::LivePlot* plots[] = {timeline.gantt(), timeline.batch()};
    std::vector<LayerDrawProbe*> axes, live;
    for (ui::LivePlot* p : plots) {
      axes.push_back(new LayerDrawProbe(p, "axes"));
      live.push_back(new LayerDrawProbe(p, p->live_layer()->name()));
    }
    for (int f = 0; f < 6; ++f) QVERIFY(add());  // more steps than the view keeps
    QCOMPARE(timeline.steps_shown(), ui::TimelineView::kSteps);
    std::vector<int> axes_draws, live_draws;
    std::vector<long> full;
    for (size_t i = 0; i < 2; ++i) {
      axes_draws.push_back(axes[i]->draws);
      live_draws.push_back(live[i]->draws);
      full.push_back(plots[i]->full_replots());
    }
    // Steps like the ones before: the axes (counted back from the newest step) stay.
    QVERIFY(add());
    for (size_t i = 0; i < 2; ++i) {
      QCOMPARE(live[i]->draws, live_draws[i] + 1);
      QCOMPARE(axes[i]->draws, axes_draws[i]);
      QCOMPARE(plots[i]->full_replots(), full[i]);
    }
    // The batch chart's newest bar is at 0 steps back, its oldest at kSteps - 1.
    QCPBars* decode = qobject_cast<QCPBars*>(timeline.batch()->plottable(1));
    QVERIFY(decode);
    QCOMPARE(decode->data()->size(), ui::TimelineView::kSteps);
    QCOMPARE((decode->data()->constEnd() - 1)->key, 0.0);
    QCOMPARE(decode->data()->constBegin()->key, double(1 - ui::TimelineView::kSteps));
    // Token counts are labelled at whole numbers only (bursts here have 1-token steps, where
    // the default ticker would label 0, 0.5, 1, 1.5).
    const QVector<double> ticks = timeline.batch()->yAxis->tickVector();
    QVERIFY(ticks.size() >= 2);
    for (double t : ticks) QCOMPARE(t, std::round(t));
  }

  void kv_chart_keeps_one_point_per_change_and_every_value() {
    ui::KvBlockMap kv;
    QCPGraph* used = kv.plot()->graph(0);
    // 45 s of steps, 20 a second: blocks in use 1, then 2, then 5 for 40 s (longer than the
    // 30 s window), then 3.
    std::vector<ui::StepRecord> all;
    quint64 step = 0;
    for (int i = 0; i < 900; ++i) {
      ui::StepRecord s;
      s.step = step++;
      s.time = 0.05 * (i + 1);
      s.step_seconds = 0.05;
      s.num_decode_tokens = 1;
      s.blocks_used = i < 20 ? 1 : i < 40 ? 2 : i < 840 ? 5 : 3;
      all.push_back(s);
    }
    for (size_t f = 0; f < all.size(); f += 10) {
      ui::TelemetryFrame frame;
      frame.steps.assign(all.begin() + long(f), all.begin() + long(f) + 10);
      auto latest = std::make_shared<StepTelemetry>();
      latest->time = frame.steps.back().time;
      frame.latest = latest;
      kv.add_frame(frame);
    }
    // A few points, not one per step; the line ends at the newest step.
    QVERIFY2(used->dataCount() <= 8, qPrintable(QString::number(used->dataCount())));
    QCOMPARE((used->data()->constEnd() - 1)->key, all.back().time);
    // Read as a step line (each value holds until the next point), it gives every step's value
    // in the last 30 s, the window's left edge included.
    const double from = all.back().time - 30.0;
    QVERIFY(used->data()->constBegin()->key <= from);
    for (const ui::StepRecord& s : all) {
      if (s.time < from) continue;
      auto at = used->data()->findEnd(s.time, false) - 1;  // the last point at or before s.time
      QCOMPARE(at->value, double(s.blocks_used));
    }
  }

  // The engine attaches its block snapshot to one post per delivery, so a frame's snapshot can
  // be older than its newest steps: the time axis follows the newest step.
  void kv_chart_shows_the_newest_step_even_past_the_snapshot() {
    ui::KvBlockMap kv;
    kv.resize(800, 400);
    kv.show();
    QVERIFY(QTest::qWaitForWindowExposed(&kv));
    quint64 step = 0;
    for (int f = 0; f < 60; ++f) {
      ui::TelemetryFrame frame = burst(0.2 * f, 40, 0.005, step);
      step += 40;
      for (ui::StepRecord& s : frame.steps) s.blocks_used = 1 + f % 3;
      auto latest = std::make_shared<StepTelemetry>();   // taken at the delivery's first post
      latest->time = frame.steps.front().time;
      frame.latest = latest;
      const long drawn = kv.draw_count();
      kv.add_frame(frame);
      QVERIFY(QTest::qWaitFor([&] { return kv.draw_count() > drawn; }, 5000));
      const double newest = frame.steps.back().time;
      QVERIFY2(kv.plot()->xAxis->range().contains(newest),
               qPrintable(QString("frame %1: newest step %2 outside %3..%4")
                              .arg(f)
                              .arg(newest)
                              .arg(kv.plot()->xAxis->range().lower)
                              .arg(kv.plot()->xAxis->range().upper)));
    }
  }

  void streaming_does_not_relayout_the_window_or_reflow_the_chips() {
    // The central tab widget repaints itself whole on every layout request that reaches it;
    // a label re-measured per delta used to send it one each time.
    auto* tabs = qobject_cast<QTabWidget*>(window().completion_view()->parentWidget()->parentWidget());
    QVERIFY(tabs);
    QTabBar* tab_bar = tabs->tabBar();
    EventCounter layouts(tabs, QEvent::LayoutRequest);
    EventCounter tab_paints(tab_bar, QEvent::Paint);
    // Warm up once: the first generation may settle the layout (scroll ranges, sizes).
    QVERIFY(stream_generation(40, 2) > 0);
    QTest::qWait(50);
    layouts.count = tab_paints.count = 0;
    ui::TokenChipsView* chips = window().completion_view()->chips();
    const long reflows = chips->reflow_count();
    const int deltas = stream_generation(120, 2);
    QVERIFY2(deltas >= 3, qPrintable(QString("only %1 deltas: the generation did not stream").arg(deltas)));
    QTest::qWait(50);
    QCOMPARE(chips->chip_count(), window().completion_view()->generated_tokens());
    QCOMPARE(chips->reflow_count(), reflows);
    QCOMPARE(layouts.count, 0);
    QCOMPARE(tab_paints.count, 0);
  }

  void a_chat_reply_streams_into_the_transcript_as_the_final_text() {
    ui::MainWindow& w = window();
    w.show_view(ui::MainWindow::View::Chat);
    ui::ChatView* chat = w.chat_view();
    chat->set_store(ui::ConversationStore(uitest::scratch_dir("live_charts_chat")));
    chat->new_chat();
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    greedy.max_tokens = 80;
    chat->sampling()->set_params(greedy);
    // 10 ms a step keeps the reply streaming for ~0.8 s: the transcript rewrite is paced to 5 % of
    // the GUI thread's time, so on a loaded machine (a rewrite costing 15 ms) it runs every
    // ~300 ms, and a faster stream could end before the second rewrite.
    emit w.step_delay_requested(10);
    chat->input()->setPlainText("Once upon a time, there was a dog named Max.");
    chat->send();
    // Mid-stream snapshots of the transcript (each delta appends to it rather than re-rendering).
    QStringList shown;
    // The context of the connection and of the queued snapshots: destroyed with this test, it
    // takes any snapshot still queued with it.
    QObject context;
    connect(&bench_->mailbox(), &gui::FrameMailbox::tokens, &context, [&] {
      QTimer::singleShot(0, &context, [&] {
        if (chat->is_generating()) shown << chat->transcript_text();
      });
    });
    QVERIFY(QTest::qWaitFor([chat] { return !chat->is_generating(); }, 60000));
    emit w.step_delay_requested(0);
    QVERIFY2(shown.size() >= 3, qPrintable(QString::number(shown.size())));
    const QString final_text = chat->transcript_text();
    for (const QString& t : shown) {
      QVERIFY2(t.endsWith(QStringLiteral("▍")), qPrintable(t));
      // What was on screen mid-stream is the start of what stands there at the end.
      QString streamed = t.chopped(1);
      streamed.replace(QChar::LineSeparator, '\n');
      QString done = final_text;
      done.replace(QChar::LineSeparator, '\n');
      QVERIFY2(done.startsWith(streamed.trimmed()), qPrintable("mid-stream: " + streamed + "\nfinal: " + done));
    }
    // The transcript grew while the reply streamed (not only once at the end).
    QVERIFY2(std::any_of(shown.cbegin(), shown.cend(), [&](const QString& t) { return t.size() > shown.first().size(); }),
             qPrintable(QString("%1 snapshots, all %2 characters").arg(shown.size()).arg(shown.first().size())));
    w.show_view(ui::MainWindow::View::Completion);
  }

  void views_tabbed_away_draw_nothing_and_capture_no_attention() {
    ui::MainWindow& w = window();
    w.show_view(ui::MainWindow::View::Throughput);
    QTest::qWait(50);
    ui::AttentionHeatmap* attention = w.attention_heatmap();
    ui::TimelineView* timeline = w.timeline_view();
    ui::KvBlockMap* kv = w.kv_map();
    // Qt keeps a dock tab behind another "visible", only moved out of the window.
    QVERIFY(timeline->isVisible());
    QVERIFY(!timeline->on_screen());
    QVERIFY(w.throughput_chart()->on_screen());
    const long timeline_draws = timeline->draw_count(), kv_draws = kv->draw_count();
    const long attention_draws = attention->draw_count(), chart_draws = w.throughput_chart()->draw_count();
    QVERIFY(stream_generation(100, 2) > 0);
    QTest::qWait(100);
    QVERIFY(w.throughput_chart()->draw_count() > chart_draws);
    QCOMPARE(timeline->draw_count(), timeline_draws);
    QCOMPARE(kv->draw_count(), kv_draws);
    QCOMPARE(attention->draw_count(), attention_draws);
    QVERIFY2(!attention->has_data(), "the engine captured attention for a view nobody sees");
    // Raised, a view catches up at once with what it missed.
    w.show_view(ui::MainWindow::View::Timeline);
    QVERIFY(QTest::qWaitFor([&] { return timeline->draw_count() > timeline_draws; }, 5000));
    QVERIFY(timeline->on_screen());
    QVERIFY(timeline->steps_shown() > 0);
    w.show_view(ui::MainWindow::View::Throughput);
  }
};

QTEST_MAIN(TestLiveCharts)
#include "test_live_charts.moc"
