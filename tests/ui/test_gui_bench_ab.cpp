// The GUI benchmark's A/B mode (--bench-ab): the arithmetic of live/quiet phase pairs on
// made-up steps, and a short real run on stories260K in the window — both phases get steps
// and tokens, the live phases draw the chart and the quiet ones do not, and the greedy text
// is unchanged. Counts, not speeds: tools/bench_gui_overhead.sh (AB=1) measures.
#include <QJsonArray>
#include <QJsonDocument>
#include <QSignalSpy>
#include <QTest>

#include "ab_phases.h"
#include "bench_mode.h"
#include "completion_view.h"
#include "ui_test_support.h"

using namespace llmwb;

namespace {

// Phase k spans [k, k + 1) seconds and settles 0.1 s in; live first.
std::vector<gui::AbPhase> phases(int n) {
  std::vector<gui::AbPhase> p(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) {
    p[size_t(k)].live = k % 2 == 0;
    p[size_t(k)].start = k;
    p[size_t(k)].settled = k + 0.1;
    p[size_t(k)].end = k + 1;
  }
  return p;
}

gui::StepSample step(int phase, double offset, double seconds, int context) {
  gui::StepSample s;
  s.phase = phase;
  s.start = phase + offset;
  s.seconds = seconds;
  s.tokens = 1;
  s.context = context;
  return s;
}

}  // namespace

class TestGuiBenchAb : public QObject {
  Q_OBJECT

 private slots:
  // Live steps take 25 % longer than quiet ones at the same context, but the quiet phases
  // hold only long contexts (slow) and the live ones only short ones (fast): the raw rates
  // hide the overhead, the position-matched figures recover it exactly.
  void position_matched_overhead_sees_through_the_position_mix() {
    const double fast = 0.001, slow = 0.004, cost = 1.25;
    std::vector<gui::StepSample> s;
    for (int k = 0; k < 4; ++k) {
      const bool live = k % 2 == 0;
      // Settle-time steps, whatever they cost, are left out.
      s.push_back(step(k, 0.05, 1.0, 10));
      for (int i = 0; i < 10; ++i) {
        s.push_back(step(k, 0.2 + 0.01 * i, live ? fast * cost : fast, 10));   // short context
        s.push_back(step(k, 0.5 + 0.01 * i, live ? slow * cost : slow, 500));  // long context
      }
      if (live)  // live phases see more of the early positions
        for (int i = 0; i < 30; ++i) s.push_back(step(k, 0.7 + 0.001 * i, fast * cost, 20));
    }
    s.push_back(step(-1, 0.5, 9.0, 10));  // before the measurement
    const gui::AbResult r = gui::analyse_ab(s, phases(4));
    QCOMPARE(r.pairs, 2);
    QCOMPARE(r.settle_steps, 4L);
    QCOMPARE(r.live.steps, 2L * 50);
    QCOMPARE(r.quiet.steps, 2L * 20);
    QCOMPARE(r.live.tokens, 2L * 50);
    QVERIFY(qAbs(r.overhead_median - (1.0 - 1.0 / cost)) < 1e-9);
    QVERIFY(qAbs(r.overhead_pooled - (1.0 - 1.0 / cost)) < 1e-9);
    for (double o : r.pair_overhead) QVERIFY(qAbs(o - 0.2) < 1e-9);
    // Raw: live 50 tokens in 10*(1.25+5)+30*1.25 ms = 100 ms, quiet 20 in 50 ms: "faster".
    QVERIFY(qAbs(r.live.tok_s() - 500.0) < 1e-6);
    QVERIFY(qAbs(r.quiet.tok_s() - 400.0) < 1e-6);
    QVERIFY(r.overhead_raw_median < 0.0);
    QVERIFY(qAbs(r.live.wall_seconds - 2 * 0.9) < 1e-9);
  }

  // A pair without steps in one phase (the engine idle, waiting for a held finish) is skipped.
  void pairs_need_steps_in_both_phases() {
    std::vector<gui::StepSample> s = {step(0, 0.2, 0.001, 10), step(2, 0.2, 0.001, 10), step(3, 0.2, 0.001, 10)};
    const gui::AbResult r = gui::analyse_ab(s, phases(4));
    QCOMPARE(r.pairs, 1);
    QCOMPARE(r.overhead_median, 0.0);
  }

  void short_ab_run_in_the_window() {
    std::unique_ptr<gui::Workbench> bench = uitest::start_application(ui::MainWindow::View::Completion);
    gui::BenchOptions o;
    // The llama2.c file: its greedy generations run to the 512-token context (~0.1 s each),
    // long enough for several phases.
    o.model = uitest::shared_path("models/stories260K/stories260K.bin");
    o.generations = 12;
    o.threads = 1;
    o.ab_phase_ms = 150;
    o.ab_settle_ms = 40;
    gui::BenchMode mode(*bench, o);
    QSignalSpy done(&mode, &gui::BenchMode::finished);
    QSignalSpy failed(&mode, &gui::BenchMode::failed);
    mode.start();
    QVERIFY(QTest::qWaitFor([&] { return done.count() + failed.count() > 0; }, 240000));
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.first().first().toString()));
    const QJsonObject j = done.first().first().toJsonObject();
    QVERIFY(j.contains("ab"));
    const QJsonObject ab = j["ab"].toObject();
    const QJsonObject live = ab["live"].toObject(), quiet = ab["quiet"].toObject();
    const QByteArray dump = QJsonDocument(ab).toJson(QJsonDocument::Compact);
    QVERIFY2(ab["pairs"].toInt() >= 1, dump.constData());
    for (const QJsonObject& side : {live, quiet}) {
      QVERIFY2(side["steps"].toDouble() > 0, dump.constData());
      QVERIFY2(side["tokens"].toDouble() > 0, dump.constData());
      QVERIFY2(side["step_seconds"].toDouble() > 0, dump.constData());
      QVERIFY2(side["tok_s"].toDouble() > 0, dump.constData());
    }
    // The live phases draw the raised chart; the quiet ones, once settled, never.
    QVERIFY2(live["draws"].toDouble() > 0, dump.constData());
    QVERIFY2(live["draws_per_s"].toDouble() > 0, dump.constData());
    QCOMPARE(quiet["draws"].toDouble(), 0.0);
    QCOMPARE(ab["overhead_pct_per_pair"].toArray().size(), ab["pairs"].toInt());
    QCOMPARE(ab["unlogged_steps"].toDouble(), 0.0);
    // The mailbox is released and the log off once the report is made.
    QVERIFY(!bench->mailbox().held());
    QVERIFY(bench->worker().step_observer() == nullptr);
    // Holding and releasing the results changed nothing in them: the greedy reference text.
    const QString reference = uitest::read_text(uitest::shared_path("models/stories260K/greedy-from-bos.txt")).trimmed();
    const QString shown = bench->window().completion_view()->output_text().trimmed();
    const int n = int(std::min(reference.size(), shown.size()));
    QVERIFY2(n > 150, qPrintable(shown));
    QCOMPARE(shown.left(n), reference.left(n));
    QCOMPARE(j["tokens"].toDouble(), double(o.generations) * bench->window().completion_view()->generated_tokens());
  }
};

QTEST_MAIN(TestGuiBenchAb)
#include "test_gui_bench_ab.moc"
