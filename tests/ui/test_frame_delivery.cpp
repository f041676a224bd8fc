// How generation results reach the GUI thread (FrameMailbox): complete and in order, finish /
// error / abort delivered, and a burst of thousands of tokens costing a handful of wake-ups
// and deliveries. Counts, not timings: tools/bench_gui_overhead.sh measures the speed.
#include <QElapsedTimer>
#include <QPlainTextEdit>
#include <QTest>

#include <atomic>
#include <map>
#include <thread>

#include "completion_view.h"
#include "frame_mailbox.h"
#include "frame_pacer.h"
#include "llmwb/llm.h"
#include "sampling_params_editor.h"
#include "ui_test_support.h"

using namespace llmwb;

namespace {

// Everything a mailbox emitted, by ticket, in the order it came.
struct Received {
  struct Generation {
    std::vector<int> ids;
    std::vector<float> probs;
    std::string text;
    int deltas = 0;
    int deltas_after_finish = 0;
    bool finished = false;
    ui::TokenDelta finish;
  };
  std::map<quint64, Generation> by_ticket;
  std::vector<quint64> order;  // tickets as they first appeared
  long frames = 0, steps = 0;
  std::vector<quint64> step_numbers;

  bool finished(quint64 ticket) const {
    auto it = by_ticket.find(ticket);
    return it != by_ticket.end() && it->second.finished;
  }

  void connect_to(gui::FrameMailbox& m, QObject* context) {
    QObject::connect(&m, &gui::FrameMailbox::tokens, context, [this](const ui::TokenDelta& d) {
      if (!by_ticket.count(d.ticket)) order.push_back(d.ticket);
      Generation& g = by_ticket[d.ticket];
      if (g.finished) ++g.deltas_after_finish;
      ++g.deltas;
      g.ids.insert(g.ids.end(), d.token_ids.begin(), d.token_ids.end());
      g.probs.insert(g.probs.end(), d.token_probs.begin(), d.token_probs.end());
      g.text += d.text;
      if (d.finished) {
        g.finished = true;
        g.finish = d;
      }
    });
    QObject::connect(&m, &gui::FrameMailbox::telemetry, context, [this](const ui::TelemetryFrame& f) {
      ++frames;
      steps += long(f.steps.size());
      for (const ui::StepRecord& s : f.steps) step_numbers.push_back(s.step);
    });
  }
};

// The delta that ends generation `ticket` (length reached).
ui::TokenDelta finish(quint64 ticket) {
  ui::TokenDelta f;
  f.ticket = ticket;
  f.finished = true;
  f.finish_reason = FinishReason::Length;
  return f;
}

ui::TokenDelta piece(quint64 ticket, int i) {
  ui::TokenDelta d;
  d.ticket = ticket;
  d.token_ids = {i};
  d.token_probs = {float(i) / 10000.0f};
  d.text = std::to_string(i) + " ";
  d.num_output_tokens = i + 1;
  d.total_time = 0.001 * i;
  return d;
}

SamplingParams greedy(int max_tokens) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.max_tokens = max_tokens;
  return p;
}

const char* kPrompt = "Once upon a time";

}  // namespace

class TestFrameDelivery : public QObject {
  Q_OBJECT

 private:
  std::unique_ptr<gui::Workbench> bench_;
  ui::MainWindow& window() { return bench_->window(); }

  // The reference: the same greedy request on a headless engine.
  static CompletionOutput headless(int max_tokens) {
    EngineConfig cfg;
    cfg.model = uitest::stories_gguf().toStdString();
    cfg.threads = 1;
    LLM llm(cfg);
    const std::vector<RequestOutput> out = llm.generate({kPrompt}, greedy(max_tokens));
    if (out.size() != 1 || !out[0].error.empty() || out[0].outputs.empty()) return {};
    return out[0].outputs[0];
  }

 private slots:
  void initTestCase() {
    bench_ = uitest::start_application(ui::MainWindow::View::Completion);
    window().show_view(ui::MainWindow::View::Throughput);
    QVERIFY(uitest::open_model_and_wait(window(), uitest::stories_gguf()));
  }

  void cleanupTestCase() { bench_.reset(); }

  // 5000 single-token steps posted from another thread while the receiver is busy: one
  // wake-up, one delivery, every token and step in order.
  void a_burst_is_one_wakeup_and_one_delivery() {
    gui::FrameMailbox box(33);
    QObject context;
    Received r;
    r.connect_to(box, &context);
    const int n = 5000;
    std::thread engine([&] {
      for (int i = 0; i < n; ++i) {
        gui::FrameMailbox::Mail m;
        m.deltas.push_back(piece(7, i));
        ui::StepRecord s;
        s.step = quint64(i);
        m.steps.push_back(s);
        box.post(std::move(m), false);
      }
    });
    engine.join();  // the receiver's event loop has not run yet
    QCOMPARE(box.wakeups(), 1L);
    QVERIFY(QTest::qWaitFor([&] { return box.deliveries() > 0; }, 5000));
    QCOMPARE(box.deliveries(), 1L);
    QCOMPARE(r.frames, 1L);
    QCOMPARE(r.steps, long(n));
    for (int i = 0; i < n; ++i) QCOMPARE(r.step_numbers[size_t(i)], quint64(i));
    const Received::Generation& g = r.by_ticket[7];
    QCOMPARE(g.deltas, 1);
    QCOMPARE(int(g.ids.size()), n);
    std::string text;
    for (int i = 0; i < n; ++i) {
      QCOMPARE(g.ids[size_t(i)], i);
      QCOMPARE(g.probs[size_t(i)], float(i) / 10000.0f);
      text += std::to_string(i) + " ";
    }
    QCOMPARE(g.text, text);
    QVERIFY(!g.finished);

    // While the pull timer runs, more tokens need no wake-up; a finish is urgent and wakes.
    gui::FrameMailbox::Mail more;
    more.deltas.push_back(piece(7, n));
    box.post(std::move(more), false);
    QCOMPARE(box.wakeups(), 1L);
    gui::FrameMailbox::Mail fin;
    ui::TokenDelta f;
    f.ticket = 7;
    f.finished = true;
    f.finish_reason = FinishReason::Length;
    f.final_text = "final";
    f.num_output_tokens = n + 1;
    f.total_time = 0.5;
    fin.deltas.push_back(f);
    box.post(std::move(fin), true);
    QCOMPARE(box.wakeups(), 2L);
    QVERIFY(QTest::qWaitFor([&] { return r.finished(7); }, 5000));
    const Received::Generation& done = r.by_ticket[7];
    QCOMPARE(int(done.ids.size()), n + 1);  // the token posted before the finish came with it
    QCOMPARE(done.ids.back(), n);
    QCOMPARE(done.finish.finish_reason, FinishReason::Length);
    QCOMPARE(done.finish.final_text, std::string("final"));
    QCOMPARE(done.finish.num_output_tokens, n + 1);
    QCOMPARE(done.finish.total_time, 0.5);
    QCOMPARE(done.deltas_after_finish, 0);
    // An idle box stops pulling: the next post wakes the receiver again.
    QTest::qWait(100);
    const long wakeups = box.wakeups();
    box.post(gui::FrameMailbox::Mail{{piece(8, 0)}, {}, nullptr}, false);
    QCOMPARE(box.wakeups(), wakeups + 1);
    QVERIFY(QTest::qWaitFor([&] { return r.by_ticket.count(8) > 0; }, 5000));
  }

  // A held box (the GUI benchmark's quiet phases) delivers nothing, not even a finish, and
  // wakes the receiver at most once per kind; releasing delivers everything, merged, in order.
  void a_held_box_delivers_nothing_until_released() {
    gui::FrameMailbox box(5);
    QObject context;
    Received r;
    r.connect_to(box, &context);
    box.hold(true);
    QVERIFY(box.held());
    const int n = 300;
    std::thread engine([&] {
      for (int i = 0; i < n; ++i) {
        gui::FrameMailbox::Mail m;
        m.deltas.push_back(piece(3, i));
        ui::StepRecord s;
        s.step = quint64(i);
        m.steps.push_back(s);
        box.post(std::move(m), i == 0);  // the first token is urgent
        if (i % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      box.post(gui::FrameMailbox::Mail{{finish(3)}, {}, nullptr}, true);
    });
    engine.join();
    QTest::qWait(60);  // many frame intervals
    QCOMPARE(box.deliveries(), 0L);
    QCOMPARE(r.frames, 0L);
    QVERIFY(r.by_ticket.empty());
    QVERIFY2(box.wakeups() <= 2, qPrintable(QString::number(box.wakeups())));
    box.hold(false);
    QCOMPARE(box.deliveries(), 1L);  // at once, in the release
    QCOMPARE(r.steps, long(n));
    const Received::Generation& g = r.by_ticket[3];
    QVERIFY(g.finished);
    QCOMPARE(g.deltas, 1);
    QCOMPARE(int(g.ids.size()), n);
    for (int i = 0; i < n; ++i) QCOMPARE(g.ids[size_t(i)], i);
    // Released, it delivers as before.
    box.post(gui::FrameMailbox::Mail{{piece(4, 0)}, {}, nullptr}, false);
    QVERIFY(QTest::qWaitFor([&] { return r.by_ticket.count(4) > 0; }, 5000));
  }

  // While held, a first token (urgent) does not say the engine waits; a finish does, once,
  // even after the first token's urgent wake-up was used up.
  void a_held_box_signals_a_waiting_finish_not_a_first_token() {
    gui::FrameMailbox box(5);
    QObject context;
    Received r;
    r.connect_to(box, &context);
    int finish_held = 0;
    QObject::connect(&box, &gui::FrameMailbox::finish_held, &context, [&] { ++finish_held; });
    box.hold(true);
    box.post(gui::FrameMailbox::Mail{{piece(5, 0)}, {}, nullptr}, true);  // the first token
    QTest::qWait(40);
    QCOMPARE(finish_held, 0);
    for (int i = 1; i < 20; ++i) box.post(gui::FrameMailbox::Mail{{piece(5, i)}, {}, nullptr}, false);
    QTest::qWait(20);
    QCOMPARE(finish_held, 0);
    box.post(gui::FrameMailbox::Mail{{finish(5)}, {}, nullptr}, true);
    QVERIFY(QTest::qWaitFor([&] { return finish_held > 0; }, 5000));
    QTest::qWait(20);
    QCOMPARE(finish_held, 1);
    QCOMPARE(box.deliveries(), 0L);
    QVERIFY(r.by_ticket.empty());
    box.hold(false);
    QVERIFY(r.by_ticket[5].finished);
    QCOMPARE(int(r.by_ticket[5].ids.size()), 20);
  }

  // With a text interval longer than the frame interval, telemetry goes every frame and text
  // every few frames, complete and in order; a finish goes at once with the tokens before it.
  void text_goes_at_its_own_pace() {
    gui::FrameMailbox box(5);
    box.set_text_interval_ms(40);
    QObject context;
    Received r;
    r.connect_to(box, &context);
    long token_deliveries = 0;
    QObject::connect(&box, &gui::FrameMailbox::tokens, &context, [&] { ++token_deliveries; });
    const int n = 200;
    std::atomic<bool> done{false};
    std::thread engine([&] {
      for (int i = 0; i < n; ++i) {
        gui::FrameMailbox::Mail m;
        m.deltas.push_back(piece(5, i));
        ui::StepRecord s;
        s.step = quint64(i);
        m.steps.push_back(s);
        box.post(std::move(m), false);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      done = true;
    });
    QElapsedTimer t;
    t.start();
    QVERIFY(QTest::qWaitFor([&] { return done.load(); }, 20000));
    engine.join();
    QVERIFY(QTest::qWaitFor([&] { return r.by_ticket[5].ids.size() == size_t(n) && r.steps == n; }, 5000));
    const double ms = double(t.elapsed());
    // At most one text delivery per ~35 ms (the interval less half a frame), plus the first.
    QVERIFY2(token_deliveries <= long(ms / 35.0) + 2, qPrintable(QString("%1 in %2 ms").arg(token_deliveries).arg(ms)));
    QVERIFY2(r.frames > token_deliveries, qPrintable(QString("%1 frames, %2 text").arg(r.frames).arg(token_deliveries)));
    const Received::Generation& g = r.by_ticket[5];
    for (int i = 0; i < n; ++i) QCOMPARE(g.ids[size_t(i)], i);
    for (int i = 0; i < n; ++i) QCOMPARE(r.step_numbers[size_t(i)], quint64(i));
    // A finish right after a text delivery still goes at once, after the token before it.
    box.post(gui::FrameMailbox::Mail{{piece(5, n)}, {}, nullptr}, false);
    box.post(gui::FrameMailbox::Mail{{finish(5)}, {}, nullptr}, true);
    QVERIFY(QTest::qWaitFor([&] { return r.finished(5); }, 1000));
    QCOMPARE(int(r.by_ticket[5].ids.size()), n + 1);
    QCOMPARE(r.by_ticket[5].deltas_after_finish, 0);
  }

  // Two generations interleaved step by step arrive each complete and in its own order.
  void interleaved_generations_stay_apart() {
    gui::FrameMailbox box(33);
    QObject context;
    Received r;
    r.connect_to(box, &context);
    std::thread engine([&] {
      for (int i = 0; i < 300; ++i) {
        gui::FrameMailbox::Mail m;
        m.deltas.push_back(piece(1, i));
        m.deltas.push_back(piece(2, 1000 + i));
        box.post(std::move(m), false);
        if (i % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      gui::FrameMailbox::Mail m;
      ui::TokenDelta f1, f2;
      f1.ticket = 1;
      f1.finished = f2.finished = true;
      f2.ticket = 2;
      f2.finish_reason = FinishReason::Abort;
      m.deltas = {f2, f1};
      box.post(std::move(m), true);
    });
    engine.join();
    QVERIFY(QTest::qWaitFor([&] { return r.finished(1) && r.finished(2); }, 5000));
    QCOMPARE(r.order.size(), size_t(2));
    QCOMPARE(r.order[0], quint64(1));
    for (int i = 0; i < 300; ++i) {
      QCOMPARE(r.by_ticket[1].ids[size_t(i)], i);
      QCOMPARE(r.by_ticket[2].ids[size_t(i)], 1000 + i);
    }
    QCOMPARE(r.by_ticket[2].finish.finish_reason, FinishReason::Abort);
  }

  // The real engine at full speed: the text and tokens the GUI receives are exactly what a
  // headless generate of the same greedy request produces, in a few deliveries.
  void streamed_generation_matches_headless() {
    const int max_tokens = 400;  // stories260K's context is 512
    const CompletionOutput ref = headless(max_tokens);
    QVERIFY(!ref.token_ids.empty());
    QObject context;
    Received r;
    r.connect_to(bench_->mailbox(), &context);
    gui::FrameMailbox& box = bench_->mailbox();
    ui::CompletionView* c = window().completion_view();
    const int generations = 3;
    const long deliveries0 = box.deliveries(), wakeups0 = box.wakeups();
    for (int g = 0; g < generations; ++g) {
      c->prompt_editor()->setPlainText(kPrompt);
      c->sampling()->set_params(greedy(max_tokens));
      c->generate();
      QVERIFY(QTest::qWaitFor([c] { return !c->is_generating(); }, 120000));
      QCOMPARE(c->output_text(), QString::fromStdString(ref.text));
    }
    QCOMPARE(int(r.by_ticket.size()), generations);
    long tokens = 0;
    for (const auto& [ticket, gen] : r.by_ticket) {
      QVERIFY(gen.finished);
      QCOMPARE(gen.finish.finish_reason, ref.finish_reason);
      QCOMPARE(gen.ids, ref.token_ids);
      QCOMPARE(gen.text, ref.text);  // the streamed pieces, not only the final text
      QCOMPARE(gen.finish.final_text, ref.text);
      QCOMPARE(gen.finish.num_output_tokens, int(ref.token_ids.size()));
      QCOMPARE(gen.probs.size(), ref.token_ids.size());
      QCOMPARE(gen.deltas_after_finish, 0);
      tokens += long(gen.ids.size());
    }
    // Wake-ups from the engine thread: the first token and the finish of each generation
    // (and an idle-to-busy transition), however many tokens stream in between.
    const long wakeups = box.wakeups() - wakeups0, deliveries = box.deliveries() - deliveries0;
    QVERIFY2(wakeups <= 3 * generations, qPrintable(QString::number(wakeups)));
    // Every step reached the charts, in a handful of frames.
    QVERIFY(r.steps >= tokens);
    QVERIFY2(deliveries < tokens / 10, qPrintable(QString("%1 deliveries for %2 tokens").arg(deliveries).arg(tokens)));
  }

  // Stop mid-stream: the abort arrives after the tokens before it, and nothing after it.
  void abort_is_delivered_after_the_tokens_so_far() {
    const CompletionOutput ref = headless(400);
    QObject context;
    Received r;
    r.connect_to(bench_->mailbox(), &context);
    ui::CompletionView* c = window().completion_view();
    emit window().step_delay_requested(2);  // slow enough to stop halfway
    c->prompt_editor()->setPlainText(kPrompt);
    c->sampling()->set_params(greedy(400));
    c->generate();
    QVERIFY(QTest::qWaitFor([&] { return !r.by_ticket.empty() && r.by_ticket.begin()->second.ids.size() >= 5; }, 60000));
    c->stop();
    QVERIFY(QTest::qWaitFor([c] { return !c->is_generating(); }, 60000));
    emit window().step_delay_requested(0);
    QTest::qWait(100);
    const Received::Generation& g = r.by_ticket.begin()->second;
    QVERIFY(g.finished);
    QCOMPARE(g.finish.finish_reason, FinishReason::Abort);
    QCOMPARE(g.deltas_after_finish, 0);
    QVERIFY(g.ids.size() >= 5 && g.ids.size() < ref.token_ids.size());
    QCOMPARE(g.finish.num_output_tokens, int(g.ids.size()));
    QVERIFY(std::equal(g.ids.begin(), g.ids.end(), ref.token_ids.begin()));
    QCOMPARE(g.finish.final_text, g.text);
    QVERIFY(ref.text.compare(0, g.text.size(), g.text) == 0);
  }

  // A request the engine rejects, and one with no model loaded, come back as errors.
  void errors_are_delivered() {
    QObject context;
    Received r;
    r.connect_to(bench_->mailbox(), &context);
    ui::GenerationRequest bad;
    bad.ticket = ui::next_ticket();
    bad.prompt = kPrompt;
    bad.params = greedy(10);
    bad.params.top_p = 2.0f;
    emit window().generate_requested(bad);
    QVERIFY(QTest::qWaitFor([&] { return r.finished(bad.ticket); }, 10000));
    QCOMPARE(r.by_ticket[bad.ticket].finish.finish_reason, FinishReason::Error);
    QVERIFY2(r.by_ticket[bad.ticket].finish.error.find("top_p") != std::string::npos,
             r.by_ticket[bad.ticket].finish.error.c_str());

    gui::Workbench empty;  // no model
    Received e;
    e.connect_to(empty.mailbox(), &context);
    ui::GenerationRequest req = bad;
    req.ticket = ui::next_ticket();
    req.params = greedy(10);
    emit empty.window().generate_requested(req);
    QVERIFY(QTest::qWaitFor([&] { return e.finished(req.ticket); }, 10000));
    QCOMPARE(e.by_ticket[req.ticket].finish.finish_reason, FinishReason::Error);
    QVERIFY(!e.by_ticket[req.ticket].finish.error.empty());
  }

  // Results arrive every screen frame while a live chart is on screen to draw them, and at the
  // text's pace while none is.
  void delivery_interval_follows_the_live_views() {
    ui::MainWindow& w = window();
    const int frame = ui::FramePacer::frame_interval_ms(w.screen());
    QVERIFY(frame < gui::Workbench::kTextIntervalMs);
    QTRY_COMPARE(bench_->mailbox().frame_interval_ms(), frame);
    using View = ui::MainWindow::View;
    std::vector<QWidget*> docks;
    for (View v : {View::Throughput, View::KvCache, View::Timeline, View::Attention})
      docks.push_back(w.view_widget(v)->parentWidget());
    for (QWidget* d : docks) d->hide();
    QTRY_COMPARE(bench_->mailbox().frame_interval_ms(), gui::Workbench::kTextIntervalMs);
    for (QWidget* d : docks) d->show();
    w.show_view(View::Throughput);
    QTRY_COMPARE(bench_->mailbox().frame_interval_ms(), frame);
  }
};

QTEST_MAIN(TestFrameDelivery)
#include "test_frame_delivery.moc"
