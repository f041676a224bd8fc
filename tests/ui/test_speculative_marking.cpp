// Speculative decoding in the GUI: accepted draft tokens are underlined in the Completion view's
// token chips (and say so on hover), the statistics line and the timeline's speculation chart
// report acceptance, and the Settings dialog offers the methods and refuses unknown ones.
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFontMetrics>
#include <QImage>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTest>

#include "live_plot.h"

#include "completion_view.h"
#include "live_text.h"
#include "sampling_params_editor.h"
#include "settings_dialog.h"
#include "telemetry_frame.h"
#include "timeline_view.h"
#include "token_chips_view.h"
#include "ui_test_support.h"

using namespace llmwb;

class TestSpeculativeMarking : public QObject {
  Q_OBJECT

 private:
  std::unique_ptr<gui::Workbench> bench_;

 private slots:
  void initTestCase() { bench_ = uitest::start_application(ui::MainWindow::View::Completion); }
  void cleanupTestCase() { bench_.reset(); }

  void accepted_draft_chips_are_underlined_and_say_so() {
    ui::TokenChipsView chips;
    chips.set_vocabulary({"a", "bb", "ccc", "dddd"});
    chips.resize(400, 120);
    chips.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chips));
    chips.append({0, 1, 2, 3}, {0.9f, 0.8f, 0.7f, 0.6f}, {0, 1, 1, 0});
    QCOMPARE(chips.chip_count(), 4);
    QCOMPARE(chips.draft_chip_count(), 2);
    QVERIFY(!chips.from_draft(0));
    QVERIFY(chips.from_draft(1));
    QVERIFY(chips.from_draft(2));
    QVERIFY(!chips.from_draft(3));
    QVERIFY(chips.tool_tip(1).contains("accepted draft token"));
    QVERIFY(!chips.tool_tip(0).contains("accepted draft token"));
    // The underline is painted at the chip's bottom in the draft colour, and only there.
    const QImage img = chips.viewport()->grab().toImage();
    auto bottom_middle = [&](int chip) {
      const QRect r = chips.chip_rect(chip);
      return img.pixelColor(r.center().x(), r.bottom() - 1).rgb();
    };
    QCOMPARE(bottom_middle(1), ui::TokenChipsView::kDraftColor);
    QCOMPARE(bottom_middle(2), ui::TokenChipsView::kDraftColor);
    QVERIFY(bottom_middle(0) != ui::TokenChipsView::kDraftColor);
    QVERIFY(bottom_middle(3) != ui::TokenChipsView::kDraftColor);
    chips.clear();
    QCOMPARE(chips.draft_chip_count(), 0);
  }

  // In a low dock the speculation chart's tick numbers stay apart and its vertical axis titles
  // show only where they fit; in a tall one everything shows.
  void the_speculation_chart_keeps_its_labels_apart_in_a_low_dock() {
    ui::TimelineView view;
    ui::TelemetryFrame frame;
    auto latest = std::make_shared<StepTelemetry>();
    latest->speculative_method = "self_int4";
    for (int i = 0; i < 40; ++i) {
      ui::StepRecord r;
      r.step = quint64(i);
      r.time = 0.01 * (i + 1);
      r.step_seconds = r.forward_seconds = 0.008;
      r.draft_seconds = 0.001;
      r.num_decode_tokens = 4;
      r.spec_drafted = 3;
      r.spec_accepted = i % 4;
      r.spec_drafts = 1;
      frame.steps.push_back(r);
      latest->speculative_total.add_round(3, i % 4);
    }
    frame.latest = latest;
    view.add_frame(frame);
    const QDir shots(uitest::scratch_dir("timeline_shots"));  // what a person would see, to look at
    auto check = [&](int width, int height, bool titles_expected) {
      view.resize(width, height);
      view.show();
      QVERIFY(QTest::qWaitForWindowExposed(&view));
      QTest::qWait(50);
      QCustomPlot* spec = view.speculation();
      spec->replot();
      const QString name = QString("timeline_%1x%2.png").arg(width).arg(height);
      view.grab().save(shots.filePath(name));
      const int rect = spec->axisRect()->rect().height();
      QVERIFY2(rect > 10, qPrintable(QString("axis rect %1 px high at %2").arg(rect).arg(height)));
      for (QCPAxis* axis : {spec->yAxis, spec->yAxis2}) {
        // Tick numbers at least a line apart, and an axis title no taller than the axis.
        const QVector<double> ticks = axis->tickVector();
        const int line = QFontMetrics(axis->tickLabelFont()).height();
        QVERIFY2(ticks.size() >= 2, qPrintable(QString("%1 ticks").arg(ticks.size())));
        for (int i = 1; i < ticks.size(); ++i)
          QVERIFY2(std::abs(axis->coordToPixel(ticks[i]) - axis->coordToPixel(ticks[i - 1])) >= line,
                   qPrintable(QString("ticks %1 and %2 at %3 px height").arg(ticks[i - 1]).arg(ticks[i]).arg(spec->height())));
        const int title = QFontMetrics(axis->labelFont()).horizontalAdvance(axis->label());
        QVERIFY2(title <= rect, qPrintable(QString("title '%1' is %2 px on a %3 px axis").arg(axis->label()).arg(title).arg(rect)));
        if (titles_expected) QVERIFY2(!axis->label().isEmpty(), "a tall chart lost its axis title");
      }
      QVERIFY(spec->xAxis->label().contains("self_int4"));  // the caption stays
    };
    check(900, 420, false);   // the dock at its smallest: each chart at its minimum height
    check(900, 560, false);
    check(900, 1100, true);
    check(900, 420, false);   // and back
  }

  void settings_offer_speculation_and_refuse_an_unknown_method() {
    ui::AppSettings s;
    s.speculative = "ngram";
    ui::SettingsDialog dialog(s);
    QComboBox* box = dialog.speculative_box();
    QVERIFY(box);
    QCOMPARE(box->currentText(), QString("ngram"));
    QVERIFY(box->findText("self-int4") >= 0);
    QCOMPARE(dialog.settings().speculative, QString("ngram"));
    box->setCurrentText("medusa");
    QTimer::singleShot(0, [] {   // the refusal's message box
      for (QWidget* w : QApplication::topLevelWidgets())
        if (w->inherits("QMessageBox")) static_cast<QDialog*>(w)->reject();
    });
    dialog.show();
    dialog.accept();
    QVERIFY2(dialog.result() != QDialog::Accepted, "an unknown method was accepted");
  }

  void settings_set_where_a_draft_stops_guessing() {
    ui::AppSettings s;
    s.speculative = "self-int4";
    ui::SettingsDialog dialog(s);
    auto* p_min = dialog.findChild<QDoubleSpinBox*>("spec_p_min");
    QVERIFY(p_min);
    QCOMPARE(p_min->text(), QString("automatic"));
    QCOMPARE(dialog.settings().spec_p_min, -1.0);
    QVERIFY(dialog.settings().engine_config("m.gguf", {}).speculative.draft_p_min_automatic());   // adaptive k
    p_min->setValue(0.75);
    QCOMPARE(dialog.settings().spec_p_min, 0.75);
    QCOMPARE(dialog.settings().engine_config("m.gguf", {}).speculative.draft_p_min, 0.75);
    p_min->setValue(0.0);
    QCOMPARE(dialog.settings().engine_config("m.gguf", {}).speculative.draft_p_min, 0.0);
    QVERIFY(!dialog.settings().engine_config("m.gguf", {}).speculative.draft_p_min_automatic());
    p_min->setValue(p_min->minimum());
    QCOMPARE(dialog.settings().spec_p_min, -1.0);
    ui::AppSettings fixed = dialog.settings();
    fixed.spec_k = 4;
    QVERIFY(!fixed.engine_config("m.gguf", {}).speculative.draft_p_min_automatic());   // a fixed k guesses k
  }

  void self_int4_generation_marks_accepted_tokens_and_keeps_the_text() {
    auto& bench = bench_;
    ui::AppSettings s = bench->window().settings();
    s.speculative = "self-int4";
    bench->window().set_settings(s);
    QVERIFY(uitest::open_model_and_wait(bench->window(), uitest::stories_gguf()));
    ui::CompletionView* view = bench->window().completion_view();
    view->prompt_editor()->setPlainText({});
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    greedy.max_tokens = 64;
    view->sampling()->set_params(greedy);
    QTest::mouseClick(view->generate_button(), Qt::LeftButton);
    QVERIFY(QTest::qWaitFor([&] { return !view->is_generating(); }, 60000));
    // The same text as without speculation (the published greedy reference).
    const QString reference = uitest::read_text(uitest::shared_path("models/stories260K/greedy-from-bos.txt"));
    const QString shown = view->output_text().trimmed();
    QVERIFY2(shown.size() > 150 && reference.startsWith(shown), qPrintable("shown: " + shown));
    QCOMPARE(view->chips()->chip_count(), 64);
    // Adaptive k: the first rounds (until 8 guesses are tested) follow the rounds alone, which
    // for this greedy text accept ~10 guesses; then the cost rule may switch this tiny model's
    // INT4 draft off (its pass costs more than the F32 target's), so later rounds are timing's.
    QVERIFY2(view->chips()->draft_chip_count() >= 5, qPrintable(QString::number(view->chips()->draft_chip_count())));
    QVERIFY(!view->chips()->from_draft(0));   // the prefill's token is the target's own
    const QString stats = view->stats_text();
    QVERIFY2(stats.contains("accepted") && stats.contains("tokens per verification"), qPrintable(stats));
    ui::TimelineView* timeline = bench->window().timeline_view();
    QVERIFY(timeline);
    QVERIFY(QTest::qWaitFor([&] { return timeline->speculation_caption().contains("self_int4"); }, 5000));
    // Adaptive k: the automatic doubt threshold, the INT4 copy's share of the model's bytes.
    QVERIFY2(timeline->speculation_caption().contains(", stops below p 0."), qPrintable(timeline->speculation_caption()));
    // And what the adaptive k weighs: the costs the engine learnt from its steps.
    QVERIFY2(timeline->speculation_caption().contains("; costs: a target pass "), qPrintable(timeline->speculation_caption()));
    QVERIFY(!timeline->acceptance_per_position().empty());
    QVERIFY(timeline->acceptance_per_position()[0] > 0.2);
  }
};

QTEST_MAIN(TestSpeculativeMarking)
#include "test_speculative_marking.moc"
