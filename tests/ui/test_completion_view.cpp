// The completion pane against the real engine and stories260K: greedy text equals the
// published reference, Stop takes effect within one step, chips and charts follow the output.
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTest>

#include "completion_view.h"
#include "model_info_panel.h"
#include "sampling_params_editor.h"
#include "throughput_chart.h"
#include "timeline_view.h"
#include "token_chips_view.h"
#include "ui_test_support.h"

using namespace llmwb;

class TestCompletionView : public QObject {
  Q_OBJECT

 private:
  std::unique_ptr<gui::Workbench> bench_;

  ui::CompletionView* view() { return bench_->window().completion_view(); }

  void start_generation(const QString& prompt, int max_tokens) {
    view()->prompt_editor()->setPlainText(prompt);
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    greedy.max_tokens = max_tokens;
    view()->sampling()->set_params(greedy);
    QVERIFY(view()->generate_button()->isEnabled());
    QTest::mouseClick(view()->generate_button(), Qt::LeftButton);
    QVERIFY(view()->is_generating());
  }

 private slots:
  void initTestCase() {
    bench_ = uitest::start_application(ui::MainWindow::View::Completion);
    QVERIFY(uitest::open_model_and_wait(bench_->window(), uitest::stories_gguf()));
  }

  void cleanupTestCase() { bench_.reset(); }

  void model_info_shows_what_was_opened() {
    ui::ModelInfoPanel* info = bench_->window().model_info_panel();
    QCOMPARE(info->value("Format"), QString("gguf"));
    QCOMPARE(info->value("Architecture"), QString("llama"));
    const int context = bench_->window().model_info().context_length;
    QVERIFY(context > 0);
    QCOMPARE(info->value("Context"), QString("%1 tokens").arg(context));
    QVERIFY(info->value("Parameters").contains("K"));
    // Where it runs: the Settings backend (cpu here), its SIMD level and threads.
    QVERIFY2(info->value("Backend").startsWith("cpu ("), qPrintable(info->value("Backend")));
    QVERIFY2(info->value("Backend").contains(" thread"), qPrintable(info->value("Backend")));
    // The tuning switches in effect, as inspect prints them.
    QVERIFY2(info->value("Tuning").contains("float_panels on"), qPrintable(info->value("Tuning")));
    QVERIFY2(info->value("Tuning").contains("device_sampling on"), qPrintable(info->value("Tuning")));
  }

  void greedy_generation_from_bos_shows_the_reference_text() {
    emit bench_->window().step_delay_requested(0);
    start_generation({}, 64);
    QVERIFY(QTest::qWaitFor([&] { return !view()->is_generating(); }, 60000));
    QCOMPARE(view()->last_finish_reason(), FinishReason::Length);
    const QString reference = uitest::read_text(uitest::shared_path("models/stories260K/greedy-from-bos.txt"));
    QVERIFY(!reference.isEmpty());
    const QString shown = view()->output_text().trimmed();
    QVERIFY2(shown.size() > 150, qPrintable(shown));
    QVERIFY2(reference.startsWith(shown), qPrintable("shown: " + shown));
  }

  void token_chips_carry_ids_and_probabilities() {
    ui::TokenChipsView* chips = view()->chips();
    QCOMPARE(chips->chip_count(), view()->generated_tokens());
    QCOMPARE(chips->chip_count(), 64);
    const QString tip = chips->tool_tip(0);
    QVERIFY2(tip.contains(QString("token %1").arg(chips->token_id(0))), qPrintable(tip));
    QVERIFY2(tip.contains("p = "), qPrintable(tip));
  }

  void charts_received_the_generation() {
    QVERIFY(bench_->window().throughput_chart()->decode_points() > 0);
    QVERIFY(bench_->window().throughput_chart()->last_decode_rate() > 0.0);
    QVERIFY(bench_->window().timeline_view()->steps_shown() > 0);
  }

  void stop_is_honoured_within_one_step() {
    // Slow motion (40 ms between steps) makes the moment of the click well defined.
    emit bench_->window().step_delay_requested(40);
    start_generation("Once upon a time", 400);
    QVERIFY(QTest::qWaitFor([&] { return view()->generated_tokens() >= 3; }, 60000));
    const int shown_at_stop = view()->generated_tokens();
    QVERIFY(view()->stop_button()->isEnabled());
    QTest::mouseClick(view()->stop_button(), Qt::LeftButton);
    QVERIFY(QTest::qWaitFor([&] { return !view()->is_generating(); }, 30000));
    QCOMPARE(view()->last_finish_reason(), FinishReason::Abort);
    // At most the step already on its way to the screen plus the one running when the abort
    // arrived.
    QVERIFY2(view()->generated_tokens() <= shown_at_stop + 2,
             qPrintable(QString("%1 tokens at stop, %2 at the end").arg(shown_at_stop).arg(view()->generated_tokens())));
    QVERIFY(view()->generate_button()->isEnabled());
    emit bench_->window().step_delay_requested(0);
  }

  void a_new_generation_after_stop_runs_to_the_end() {
    start_generation({}, 16);
    QVERIFY(QTest::qWaitFor([&] { return !view()->is_generating(); }, 60000));
    QCOMPARE(view()->last_finish_reason(), FinishReason::Length);
    QCOMPARE(view()->generated_tokens(), 16);
  }
};

QTEST_MAIN(TestCompletionView)
#include "test_completion_view.moc"
