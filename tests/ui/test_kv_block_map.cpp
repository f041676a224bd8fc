// The KV cache view shows exactly the block counts the engine reports, for every frame of a
// running generation, and describes a block on hover.
#include <QPlainTextEdit>
#include <QTest>
#include <QTimer>

#include "completion_view.h"
#include "kv_block_grid.h"
#include "kv_block_map.h"
#include "sampling_params_editor.h"
#include "ui_test_support.h"

using namespace llmwb;

class TestKvBlockMap : public QObject {
  Q_OBJECT

 private:
  std::unique_ptr<gui::Workbench> bench_;

 private slots:
  void initTestCase() {
    bench_ = uitest::start_application(ui::MainWindow::View::KvCache);
    QVERIFY(uitest::open_model_and_wait(bench_->window(), uitest::stories_gguf()));
  }

  void cleanupTestCase() { bench_.reset(); }

  void grid_counts_equal_the_engines_counts_while_generating() {
    ui::MainWindow& w = bench_->window();
    emit w.step_delay_requested(15);
    ui::CompletionView* c = w.completion_view();
    c->prompt_editor()->setPlainText("Once upon a time");
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    greedy.max_tokens = 120;
    c->sampling()->set_params(greedy);
    c->generate();
    ui::KvBlockMap* kv = w.kv_map();
    int frames_checked = 0, max_used = 0;
    // Every frame shown while generating: the grid's own cells against the engine's numbers.
    QMetaObject::Connection conn = connect(&bench_->mailbox(), &gui::FrameMailbox::telemetry, this, [&] {
      QTimer::singleShot(0, this, [&] {
        const ui::KvBlockGrid::Counts counts = kv->grid()->counts();
        QCOMPARE(counts.used, kv->engine_blocks_used());
        QCOMPARE(counts.cached, kv->engine_blocks_cached());
        QCOMPARE(counts.free, kv->engine_blocks_free());
        QCOMPARE(kv->grid()->block_count(), counts.used + counts.cached + counts.free);
        max_used = std::max(max_used, counts.used);
        ++frames_checked;
      });
    });
    QVERIFY(QTest::qWaitFor([&] { return !c->is_generating(); }, 120000));
    QTest::qWait(100);
    disconnect(conn);
    QVERIFY2(frames_checked >= 5, qPrintable(QString::number(frames_checked)));
    // 4 prompt tokens + 120 generated need ceil(125 / block size) blocks at the peak.
    QVERIFY(max_used >= 2);
    QVERIFY(kv->legend_text().contains(QString::number(kv->grid()->block_count())));
    emit w.step_delay_requested(0);
  }

  void hovering_a_block_names_its_id_owner_tokens_and_ref_count() {
    ui::KvBlockGrid* grid = bench_->window().kv_map()->grid();
    QVERIFY(grid->block_count() > 0);
    QCOMPARE(grid->block_at(QPoint(1, 1)), 0);
    const QString text = grid->describe_block(0);
    QVERIFY2(text.startsWith("block 0"), qPrintable(text));
    QVERIFY(text.contains("owner:"));
    QVERIFY(text.contains("tokens filled:"));
    QVERIFY(text.contains("ref count:"));
  }
};

QTEST_MAIN(TestKvBlockMap)
#include "test_kv_block_map.moc"
