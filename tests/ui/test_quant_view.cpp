// The Quantization view driven like a user: without a model Run explains itself in the
// banner; with stories260K, int8 and int4-g32 reports arrive from the worker thread and show
// exactly what llmwb::make_quant_report returns for the same inputs (bars per layer, the worst
// tensor on top, its histogram, the end-to-end figures, the JSON export); a cancel in the
// middle of a run stops it while the GUI thread keeps turning.
#include <QComboBox>
#include <QFileInfo>
#include <QHeaderView>
#include <QProgressBar>
#include <QPushButton>
#include <QSemaphore>
#include <QTableWidget>
#include <QTest>

#include <algorithm>
#include <atomic>
#include <cmath>

#include "error_histogram.h"
#include "layer_error_chart.h"
#include "message_banner.h"
#include "quant_view.h"
#include "ui_test_support.h"

using namespace llmwb;

class TestQuantView : public QObject {
  Q_OBJECT

 private:
  std::unique_ptr<gui::Workbench> bench_;
  ui::QuantView* view() { return bench_->window().quant_view(); }

  // The engine's own answer for what the view asks: same model file, scheme and text.
  QuantReport engine_report(const QString& scheme) {
    QuantReportOptions o = view()->options();
    o.scheme = scheme.toStdString();
    o.model_path = QFileInfo(uitest::stories_gguf()).absoluteFilePath().toStdString();
    o.threads = 1;   // batch invariance: the thread count does not change a single bit
    return make_quant_report(o);
  }

  bool run_and_wait(const QString& scheme) {
    view()->set_scheme(scheme);
    QTest::mouseClick(view()->run_button(), Qt::LeftButton);
    if (!view()->is_running()) return false;
    return QTest::qWaitFor([&] { return !view()->is_running(); }, 120000) && view()->report().has_value();
  }

  // Everything the view shows for `r` against the engine's report `want`.
  void check_matches(const QuantReport& want) {
    const QuantReport& got = *view()->report();
    QCOMPARE(got.scheme, want.scheme);
    QCOMPARE(got.n_layers, 5);
    QCOMPARE(got.weight_bytes_after, want.weight_bytes_after);
    QCOMPARE(got.tensors.size(), want.tensors.size());
    for (size_t i = 0; i < want.tensors.size(); ++i) {
      QCOMPARE(got.tensors[i].name, want.tensors[i].name);
      QCOMPARE(got.tensors[i].mse, want.tensors[i].mse);
      QCOMPARE(got.tensors[i].histogram, want.tensors[i].histogram);
    }
    QCOMPARE(got.text.ppl_ref, want.text.ppl_ref);
    QCOMPARE(got.text.ppl_quant, want.text.ppl_quant);
    QCOMPARE(got.text.kl_mean, want.text.kl_mean);
    QCOMPARE(got.greedy.quant, want.greedy.quant);

    // One bar per layer, each the layer's residual-stream error.
    ui::LayerErrorChart* chart = view()->layer_chart();
    chart->set_mode(ui::LayerErrorChart::Mode::Residual);
    QCOMPARE(chart->series_count(), 1);
    const std::vector<double> bars = chart->series_values(0);
    QCOMPARE(int(bars.size()), want.n_layers);
    for (int l = 0; l < want.n_layers; ++l) {
      const auto it = std::find_if(want.outputs.begin(), want.outputs.end(),
                                   [&](const OutputError& e) { return e.label == "layer " + std::to_string(l); });
      QVERIFY(it != want.outputs.end());
      QCOMPARE(bars[size_t(l)], it->rel_err);
      QVERIFY(it->rel_err > 0.0);
    }

    // Worst first: row 0 holds the largest MSE of all the scheme changed, and its histogram shows.
    QTableWidget* table = view()->tensor_table();
    QCOMPARE(table->rowCount(), int(want.tensors.size()));
    const auto worst = std::max_element(want.tensors.begin(), want.tensors.end(),
                                        [](const TensorError& a, const TensorError& b) { return a.mse < b.mse; });
    QCOMPARE(table->item(0, ui::QuantView::kTensor)->text(), QString::fromStdString(worst->name));
    QCOMPARE(table->item(0, ui::QuantView::kMse)->data(Qt::UserRole).toDouble(), worst->mse);
    QCOMPARE(view()->histogram()->tensor_name(), QString::fromStdString(worst->name));
    const std::vector<double> counts = view()->histogram()->counts();
    QCOMPARE(counts.size(), worst->histogram.size());
    for (size_t i = 0; i < counts.size(); ++i) QCOMPARE(counts[i], double(worst->histogram[i]));

    // The figures as printed.
    QVERIFY2(view()->figure("perplexity").contains(QString::number(want.text.ppl_ref, 'f', 4)),
             qPrintable(view()->figure("perplexity")));
    QVERIFY(view()->figure("perplexity").contains(QString::number(want.text.ppl_quant, 'f', 4)));
    QVERIFY(view()->figure("greedy").startsWith(QString("%1 / %2").arg(want.greedy.n_same).arg(want.greedy.n_tokens)));
    QVERIFY(view()->figure("top1").startsWith(QString::number(100.0 * want.text.top1_agreement, 'f', 2)));
  }

 private slots:
  void initTestCase() { bench_ = uitest::start_application(ui::MainWindow::View::Quantization); }

  void cleanupTestCase() { bench_.reset(); }

  void without_a_model_the_banner_says_what_to_do() {
    QVERIFY(!view()->run_button()->isEnabled());
    view()->run();   // what Generate ▸ Send does on this tab
    QVERIFY(!view()->is_running());
    QVERIFY(view()->banner()->isVisible());
    QCOMPARE(view()->banner()->kind(), ui::MessageBanner::Kind::Error);
    QVERIFY2(view()->banner()->text().contains("Load a model"), qPrintable(view()->banner()->text()));
    // The worker refuses too, and its answer lands in the same banner.
    view()->banner()->hide();
    emit bench_->window().quant_report_requested(view()->options());
    QVERIFY(QTest::qWaitFor([&] { return view()->banner()->isVisible(); }, 10000));
    QVERIFY2(view()->banner()->text().contains("load a model first"), qPrintable(view()->banner()->text()));
  }

  void the_model_opens() {
    QVERIFY(uitest::open_model_and_wait(bench_->window(), uitest::stories_gguf()));
    QVERIFY(view()->run_button()->isEnabled());
    QVERIFY(view()->scheme_box()->findText("int4-g32") >= 0);
  }

  void int8_report_shows_what_the_engine_measures() {
    uitest::EventLoopProbe probe;
    QVERIFY(run_and_wait("int8"));
    QVERIFY(!view()->banner()->isVisible());
    check_matches(engine_report("int8"));
    // The report was made elsewhere: the GUI thread never stopped for long (a generous bound
    // for a busy machine; the whole run takes a few hundred milliseconds of CPU).
    QVERIFY2(probe.max_gap_ms() < 400.0, qPrintable(QString::number(probe.max_gap_ms())));
  }

  void int4_report_shows_what_the_engine_measures_and_exports_the_cli_json() {
    QVERIFY(run_and_wait("int4-g32"));
    const QuantReport want = engine_report("int4-g32");
    check_matches(want);
    // INT4 costs more than INT8 on every layer and in perplexity.
    QVERIFY(want.text.ppl_quant > want.text.ppl_ref);

    // Matmul outputs by kind: seven series (q k v o gate up down), one value per layer.
    ui::LayerErrorChart* chart = view()->layer_chart();
    chart->set_mode(ui::LayerErrorChart::Mode::Matmuls);
    QCOMPARE(chart->series_count(), 7);
    for (int k = 0; k < 7; ++k) {
      const std::vector<double> v = chart->series_values(k);
      QCOMPARE(int(v.size()), want.n_layers);
      for (double x : v) QVERIFY(std::isfinite(x) && x > 0.0);
    }
    chart->set_mode(ui::LayerErrorChart::Mode::Residual);

    // Sorting by SNR (a click on the header) puts the lowest SNR on top.
    QTableWidget* table = view()->tensor_table();
    table->sortItems(ui::QuantView::kSnr, Qt::AscendingOrder);
    double min_snr = INFINITY;
    for (const TensorError& t : want.tensors) min_snr = std::min(min_snr, t.snr_db);
    QCOMPARE(table->item(0, ui::QuantView::kSnr)->data(Qt::UserRole).toDouble(), min_snr);
    // Selecting a row shows that tensor's histogram.
    table->selectRow(3);
    QCOMPARE(view()->histogram()->tensor_name(), table->item(3, ui::QuantView::kTensor)->text());

    // Export: byte for byte what `llmwb-cli quant-report --json` prints for the same inputs.
    const QString path = uitest::scratch_dir("quant_view") + "/report.json";
    QVERIFY(view()->export_json(path));
    QCOMPARE(uitest::read_text(path), QString::fromStdString(quant_report_json(want) + "\n"));
  }

  void an_evaluation_text_file_is_used_and_a_missing_one_is_refused() {
    QVERIFY(!view()->set_text_file("/nonexistent/eval.txt"));
    QVERIFY(view()->banner()->isVisible());
    QVERIFY2(view()->banner()->text().contains("/nonexistent/eval.txt"), qPrintable(view()->banner()->text()));
    QCOMPARE(QString::fromStdString(view()->options().text_name), QString("(built-in sample)"));

    const QString path = QString(LLMWB_SOURCE_DIR) + "/tests/data/quant_eval_stories.txt";
    QVERIFY(view()->set_text_file(path));
    QVERIFY(run_and_wait("int8"));
    QCOMPARE(QString::fromStdString(view()->report()->text_name), path);
    QVERIFY(view()->report()->text.n_windows > 1);   // a long text: several context windows
    const QuantReport want = engine_report("int8");
    QCOMPARE(view()->report()->text.ppl_quant, want.text.ppl_quant);
    QCOMPARE(view()->report()->text.n_scored, want.text.n_scored);
    QVERIFY(view()->set_text_file({}));   // back to the built-in sample
    QCOMPARE(view()->options().text, builtin_quant_eval_text());
  }

  void cancel_in_the_middle_stops_the_run_and_the_gui_keeps_turning() {
    // The worker is held at its first progress report past 30% (a direct connection runs in
    // the worker thread) until the test has pressed Cancel: the cancel lands mid-run however
    // fast the machine is.
    QSemaphore gate;
    std::atomic<bool> held{false};
    std::atomic<bool> in_gui_thread{true};
    QThread* gui = QThread::currentThread();
    auto hold = connect(&bench_->worker(), &gui::EngineWorker::quant_progress, &bench_->worker(),
                        [&](double fraction, const QString&) {
                          if (fraction < 0.3 || held) return;
                          in_gui_thread = QThread::currentThread() == gui;
                          held = true;
                          gate.tryAcquire(1, 60000);
                        },
                        Qt::DirectConnection);
    view()->set_scheme("int4-g32");
    QTest::mouseClick(view()->run_button(), Qt::LeftButton);
    QVERIFY(view()->is_running());
    QVERIFY(!view()->report().has_value());   // the old report went with the new run
    QVERIFY(QTest::qWaitFor([&] { return held.load(); }, 60000));
    QVERIFY(!in_gui_thread);
    // Mid-run, the GUI thread turns freely and shows the progress.
    uitest::EventLoopProbe probe;
    QTest::qWait(150);
    QVERIFY2(probe.ticks() >= 5, qPrintable(QString::number(probe.ticks())));
    QVERIFY(QTest::qWaitFor([&] { return view()->progress_bar()->value() >= 300; }, 5000));
    QVERIFY(view()->cancel_button()->isEnabled());
    QTest::mouseClick(view()->cancel_button(), Qt::LeftButton);
    gate.release();
    QVERIFY(QTest::qWaitFor([&] { return !view()->is_running(); }, 60000));
    disconnect(hold);
    QVERIFY(!view()->report().has_value());
    QCOMPARE(view()->tensor_table()->rowCount(), 0);
    QVERIFY(view()->layer_chart()->series_values(0).empty());
    QVERIFY(view()->banner()->isVisible());
    QCOMPARE(view()->banner()->kind(), ui::MessageBanner::Kind::Info);
    QVERIFY2(view()->banner()->text().contains("cancelled"), qPrintable(view()->banner()->text()));
    QVERIFY(view()->run_button()->isEnabled());

    // And the next run completes.
    QVERIFY(run_and_wait("int8"));
    QVERIFY(!view()->banner()->isVisible());
  }
};

QTEST_MAIN(TestQuantView)
#include "test_quant_view.moc"
