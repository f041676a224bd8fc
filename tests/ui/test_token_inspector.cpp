// The token inspector through real widgets, against the real engine and stories260K: Pause
// holds a generation (Step adds exactly one token, Resume lets it finish), clicking a token
// chip opens its step (the sampler's view names the chip's token as chosen, the logit lens has
// a row per layer, the last layer ranks the chosen token first), and Fork continues from
// another candidate as a new branch that starts with the context and that candidate.
#include <QComboBox>
#include <QPlainTextEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTableWidget>
#include <QTest>

#include "chat_view.h"
#include "completion_view.h"
#include "conversation_store.h"
#include "kv_block_grid.h"
#include "kv_block_map.h"
#include "sampling_params_editor.h"
#include "step_inspector_view.h"
#include "token_chips_view.h"
#include "ui_test_support.h"

using namespace llmwb;

class TestTokenInspector : public QObject {
  Q_OBJECT

 private:
  std::unique_ptr<gui::Workbench> bench_;
  ui::CompletionView* view() { return bench_->window().completion_view(); }

  void click_chip(int chip) {
    ui::TokenChipsView* chips = view()->chips();
    const QRect r = chips->chip_rect(chip);
    QVERIFY(!r.isEmpty());
    QTest::mouseClick(chips->viewport(), Qt::LeftButton, {}, r.center());
  }

 private slots:
  void initTestCase() {
    bench_ = uitest::start_application(ui::MainWindow::View::Completion);
    QVERIFY(uitest::open_model_and_wait(bench_->window(), uitest::stories_gguf()));
  }
  void cleanupTestCase() { bench_.reset(); }

  void pause_step_and_resume_through_the_buttons() {
    // Slow motion, so that Pause lands mid-generation.
    emit bench_->window().step_delay_requested(20);
    view()->prompt_editor()->setPlainText("Once upon a time");
    SamplingParams p;
    p.temperature = 0.8f;
    p.seed = 11;
    p.max_tokens = 60;
    view()->sampling()->set_params(p);
    QTest::mouseClick(view()->generate_button(), Qt::LeftButton);
    QVERIFY(QTest::qWaitFor([&] { return view()->generated_tokens() >= 3; }, 20000));
    QVERIFY(view()->pause_button()->isEnabled());
    QTest::mouseClick(view()->pause_button(), Qt::LeftButton);
    QVERIFY(QTest::qWaitFor([&] { return view()->is_paused(); }, 5000));
    QTest::qWait(300);   // the pause took effect: no more tokens arrive
    const int held = view()->chips()->chip_count();
    // The KV map shows the held request's blocks (still allocated) as paused.
    bench_->window().show_view(ui::MainWindow::View::KvCache);
    QVERIFY(QTest::qWaitFor([&] { return bench_->window().kv_map()->legend_text().contains("1 paused"); }, 5000));
    QVERIFY(bench_->window().kv_map()->engine_blocks_used() > 0);
    bench_->window().show_view(ui::MainWindow::View::Completion);
    QTest::qWait(300);
    QCOMPARE(view()->chips()->chip_count(), held);
    QVERIFY(view()->step_button()->isEnabled());
    QTest::mouseClick(view()->step_button(), Qt::LeftButton);
    QVERIFY(QTest::qWaitFor([&] { return view()->chips()->chip_count() == held + 1; }, 5000));
    QTest::qWait(300);
    QCOMPARE(view()->chips()->chip_count(), held + 1);
    QTest::mouseClick(view()->resume_button(), Qt::LeftButton);
    QVERIFY(QTest::qWaitFor([&] { return !view()->is_generating(); }, 30000));
    QCOMPARE(view()->chips()->chip_count(), 60);
    emit bench_->window().step_delay_requested(0);
  }

  void the_chat_holds_and_resumes_its_reply() {
    bench_->window().show_view(ui::MainWindow::View::Chat);
    ui::ChatView* chat = bench_->window().chat_view();
    chat->set_store(ui::ConversationStore(uitest::scratch_dir("inspector-chat")));
    SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = 60;
    p.ignore_eos = true;
    chat->sampling()->set_params(p);
    emit bench_->window().step_delay_requested(20);
    chat->input()->setPlainText("Tell me a story.");
    chat->send();
    QVERIFY(chat->is_generating());
    QTest::qWait(150);
    QVERIFY(chat->pause_button()->isEnabled());
    QTest::mouseClick(chat->pause_button(), Qt::LeftButton);
    QVERIFY(QTest::qWaitFor([&] { return chat->is_paused(); }, 5000));
    QCOMPARE(chat->pause_button()->text(), QString("Resume"));
    QVERIFY(chat->step_button()->isEnabled());
    // 60 tokens at 20 ms a step would be done in ~1.2 s: held, the reply does not finish.
    QTest::qWait(2000);
    QVERIFY(chat->is_generating());
    QTest::mouseClick(chat->step_button(), Qt::LeftButton);
    QTest::qWait(200);
    QVERIFY(chat->is_generating());
    QTest::mouseClick(chat->pause_button(), Qt::LeftButton);   // Resume
    QVERIFY(QTest::qWaitFor([&] { return !chat->is_generating(); }, 30000));
    QVERIFY(!chat->is_paused());
    emit bench_->window().step_delay_requested(0);
    bench_->window().show_view(ui::MainWindow::View::Completion);
  }

  void clicking_a_chip_opens_its_step() {
    click_chip(5);
    ui::StepInspectorView* in = view()->inspector();
    QVERIFY(QTest::qWaitFor([&] { return in->has_step() && in->index() == 5; }, 10000));
    QCOMPARE(in->step().sampler.chosen, view()->chips()->token_id(5));
    QCOMPARE(view()->chips()->selected(), 5);
    QVERIFY(in->sampler_table()->rowCount() > 0);
    QCOMPARE(in->lens_table()->rowCount(), bench_->window().model_info().n_layers);
    QCOMPARE(in->lens_table()->item(in->lens_table()->rowCount() - 1, 1)->text(), QString("0"));
    QVERIFY(in->time_table()->rowCount() > 0);
    QVERIFY2(in->summary().contains("draw u"), qPrintable(in->summary()));
    // The KV block map outlines the blocks the step read.
    QCOMPARE(bench_->window().kv_map()->grid()->highlighted(), in->step().attention.blocks_read);
    QVERIFY(!in->step().attention.blocks_read.empty());
  }

  void fork_continues_from_another_candidate_as_a_branch() {
    ui::StepInspectorView* in = view()->inspector();
    const int chosen = in->step().sampler.chosen;
    int row = 0;
    while (in->step().sampler.candidates[size_t(row)].token == chosen) ++row;
    const int alt = in->step().sampler.candidates[size_t(row)].token;
    in->sampler_table()->selectRow(row);
    QVERIFY(in->fork_button()->isEnabled());
    QTest::mouseClick(in->fork_button(), Qt::LeftButton);
    QCOMPARE(view()->branch_count(), 2);
    QVERIFY(QTest::qWaitFor([&] { return !view()->is_generating(); }, 30000));
    ui::TokenChipsView* chips = view()->chips();
    QVERIFY(chips->chip_count() > 6);
    QCOMPARE(chips->token_id(5), alt);   // the branch: the five tokens before, then the candidate
    QCOMPARE(view()->branches()->currentIndex(), 1);
    // The first branch is still there, unchanged.
    view()->branches()->setCurrentIndex(0);
    emit view()->branches()->activated(0);
    QCOMPARE(chips->chip_count(), 60);
    QCOMPARE(chips->token_id(5), chosen);
  }
};

QTEST_MAIN(TestTokenInspector)
#include "test_token_inspector.moc"
