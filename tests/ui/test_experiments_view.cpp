// Experiments: two configurations give two result rows with the same greedy tokens; the backend
// column runs each configuration on its own backend (an unavailable one reports why); the
// experiment round-trips through JSON, the table exports as CSV, a bad file shows an error;
// the F32 / INT8 / INT4 preset shows each scheme's size and accuracy next to its speed, as
// the engine's quant report measures them, and the outputs pane shows every line.
#include <QFile>
#include <QFileInfo>
#include <QScrollBar>
#include <QTableWidget>
#include <QTest>
#include <QTextBrowser>

#include <cmath>
#include <QComboBox>

#include <QStandardItemModel>

#include "app_settings.h"
#include "llmwb/backends.h"
#include "experiments_view.h"
#include "llmwb/quant_report.h"
#include "settings_dialog.h"
#include "message_banner.h"
#include "ui_test_support.h"

using namespace llmwb;

class TestExperimentsView : public QObject {
  Q_OBJECT

 private:
  std::unique_ptr<gui::Workbench> bench_;
  ui::ExperimentsView* view() { return bench_->window().experiments_view(); }

  static ui::Experiment two_configurations() {
    ui::Experiment e;
    e.name = "threads";
    e.prompts = QStringList{"Once upon a time", "The cat sat"};
    e.max_tokens = 24;
    e.temperature = 0.0f;
    e.seed = 99;
    e.configs = {ui::ExperimentConfig::named("one thread", 1, 16), ui::ExperimentConfig::named("two threads", 2, 8)};
    return e;
  }

  // Runs the view's experiment of two configurations: both finish without an error and emit
  // the same tokens (the caller returns when QTest::currentTestFailed()).
  void run_two_expecting_the_same_tokens() {
    view()->run();
    QVERIFY(QTest::qWaitFor([&] { return !view()->is_running(); }, 120000));
    const auto& results = view()->results();
    QCOMPARE(results.size(), size_t(2));
    QVERIFY2(results[0].error.isEmpty(), qPrintable(results[0].error));
    QVERIFY2(results[1].error.isEmpty(), qPrintable(results[1].error));
    QVERIFY(!results[0].token_ids.empty());
    QCOMPARE(results[1].token_ids, results[0].token_ids);
  }

 private slots:
  void initTestCase() {
    bench_ = uitest::start_application(ui::MainWindow::View::Experiments);
    QVERIFY(uitest::open_model_and_wait(bench_->window(), uitest::stories_gguf()));
  }

  void cleanupTestCase() { bench_.reset(); }

  void two_configurations_yield_two_result_rows() {
    view()->set_experiment(two_configurations());
    view()->run();
    QVERIFY(view()->is_running());
    QVERIFY(QTest::qWaitFor([&] { return !view()->is_running(); }, 120000));
    QCOMPARE(view()->result_rows(), 2);
    const auto& results = view()->results();
    QCOMPARE(results.size(), size_t(2));
    for (const auto& r : results) {
      QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
      QCOMPARE(r.token_ids.size(), size_t(2));
      QCOMPARE(r.token_ids[0].size(), size_t(24));
    }
    // Greedy decoding does not depend on threads or block size.
    QCOMPARE(results[0].token_ids, results[1].token_ids);
    QCOMPARE(ui::ExperimentsView::first_divergence(results[0].token_ids[0], results[1].token_ids[0]), -1);
    QTableWidget* table = view()->results_table();
    QCOMPARE(table->item(0, 0)->text(), QString("one thread"));
    QCOMPARE(table->item(1, 0)->text(), QString("two threads"));
    QCOMPARE(table->horizontalHeaderItem(1)->text(), QString("output tok/s"));
    QVERIFY(table->item(0, 1)->data(Qt::UserRole).toDouble() > 0.0);
  }

  // The KV dtype and quantization pickers list what the engine accepts (llmwb::kv_dtypes(),
  // llmwb::quantize_schemes()), and a run with int8 KV and q4_k_m weights works end to end.
  void int8_kv_and_k_quant_choices_run_end_to_end() {
    ui::Experiment e = two_configurations();
    e.configs[1].kv_dtype = "int8";
    e.configs[1].quantize = "q4_k_m";
    view()->set_experiment(e);
    const ui::Experiment back = view()->experiment();
    QCOMPARE(back.configs[0].kv_dtype, QString("f32"));
    QCOMPARE(back.configs[1].kv_dtype, QString("int8"));
    QCOMPARE(back.configs[1].quantize, QString("q4_k_m"));
    view()->run();
    QVERIFY(QTest::qWaitFor([&] { return !view()->is_running(); }, 120000));
    for (const auto& r : view()->results()) {
      QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
      QCOMPARE(r.token_ids[0].size(), size_t(24));
    }
  }

  void settings_offer_the_engines_kv_dtypes() {
    ui::AppSettings s;
    s.kv_dtype = "int8";
    ui::SettingsDialog d(s);
    QComboBox* kv = nullptr;
    for (QComboBox* c : d.findChildren<QComboBox*>())
      if (c->findText("int8") >= 0) kv = c;
    QVERIFY(kv);
    QCOMPARE(kv->count(), int(llmwb::kv_dtypes().size()));
    QCOMPARE(kv->currentText(), QString("int8"));
    QCOMPARE(d.settings().kv_dtype, QString("int8"));
    QCOMPARE(d.settings().engine_config("m.gguf", "").kv_dtype, std::string("int8"));
    kv->setCurrentText("f32");
    QCOMPARE(d.settings().kv_dtype, QString("f32"));
  }

  // "auto" threads run a configuration like the main engine (all cores but one, so the GUI
  // thread cannot stall its parallel steps); a number is taken as it is.
  void automatic_threads_match_the_main_engine() {
    EngineConfig base;
    ui::ExperimentConfig c = ui::ExperimentConfig::named("auto");
    QCOMPARE(c.apply_to(base).threads, ui::AppSettings::automatic_threads());
    QCOMPARE(c.apply_to(base).threads, ui::AppSettings{}.engine_config("m.gguf", "").threads);
    QVERIFY(ui::AppSettings::automatic_threads() >= 1);
    c.threads = 3;
    QCOMPARE(c.apply_to(base).threads, 3);
  }

  void first_divergence_finds_the_first_differing_token() {
    QCOMPARE(ui::ExperimentsView::first_divergence({1, 2, 3}, {1, 2, 4}), 2);
    QCOMPARE(ui::ExperimentsView::first_divergence({1, 2, 3}, {1, 2, 3}), -1);
    QCOMPARE(ui::ExperimentsView::first_divergence({1, 2}, {1, 2, 3}), 2);
    QCOMPARE(ui::ExperimentsView::first_divergence({5}, {6}), 0);
  }

  void csv_export_has_a_header_and_one_line_per_configuration() {
    const QString path = uitest::scratch_dir("experiments") + "/table.csv";
    QVERIFY(view()->export_csv(path));
    const QStringList lines = uitest::read_text(path).split("\r\n", Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 3);
    QVERIFY(lines[0].startsWith("configuration,output tok/s"));
    QVERIFY(lines[1].startsWith("one thread,"));
  }

  void an_experiment_round_trips_through_json() {
    const QString path = uitest::scratch_dir("experiments_json") + "/e.json";
    view()->set_experiment(two_configurations());
    QVERIFY(view()->save(path));
    view()->set_experiment(ui::Experiment{});
    QCOMPARE(view()->experiment().configs.size(), size_t(0));
    QVERIFY(view()->load(path));
    const ui::Experiment e = view()->experiment();
    QCOMPARE(e.to_json(), two_configurations().to_json());
  }

  void a_malformed_experiment_file_shows_an_error_and_changes_nothing() {
    const QString path = uitest::scratch_dir("experiments_bad") + "/bad.json";
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\"configs\": [1, 2");
    f.close();
    view()->set_experiment(two_configurations());
    QVERIFY(!view()->load(path));
    QVERIFY(bench_->window().banner()->isVisible());
    QVERIFY2(bench_->window().banner()->text().contains("bad.json"), qPrintable(bench_->window().banner()->text()));
    QCOMPARE(view()->experiment().to_json(), two_configurations().to_json());
  }

  void f32_int8_int4_preset_compares_size_speed_and_accuracy_side_by_side() {
    const auto& presets = view()->presets();
    const auto preset = std::find_if(presets.begin(), presets.end(),
                                     [](const ui::Experiment& e) { return e.name == "F32 vs INT8 vs INT4"; });
    QVERIFY(preset != presets.end());
    QVERIFY(preset->accuracy);
    view()->set_experiment(*preset);
    view()->run();
    QVERIFY(QTest::qWaitFor([&] { return !view()->is_running(); }, 180000));
    const auto& results = view()->results();
    QCOMPARE(results.size(), size_t(3));
    QTableWidget* table = view()->results_table();
    auto column = [&](const QString& name) {
      for (int c = 0; c < table->columnCount(); ++c)
        if (table->horizontalHeaderItem(c)->text() == name) return c;
      return -1;
    };
    auto value = [&](int row, const QString& name) { return table->item(row, column(name))->data(Qt::UserRole).toDouble(); };
    // Next to the speed: decode tok/s, then size and the accuracy figures.
    const int decode = column("decode tok/s");
    QVERIFY(decode > 0);
    QCOMPARE(column("weights MiB"), decode + 1);
    QCOMPARE(column("perplexity"), decode + 2);
    QCOMPARE(column("ppl vs stored %"), decode + 3);
    QCOMPARE(column("KL vs stored"), decode + 4);
    QCOMPARE(column("greedy agree %"), decode + 5);

    const std::string model = QFileInfo(uitest::stories_gguf()).absoluteFilePath().toStdString();
    for (int row = 0; row < 3; ++row) {
      QVERIFY2(results[size_t(row)].error.isEmpty(), qPrintable(results[size_t(row)].error));
      // The same measurement through the engine's public API.
      QuantReportOptions o;
      o.model_path = model;
      o.scheme = preset->configs[size_t(row)].quantize.toStdString();
      o.text = builtin_quant_eval_text();
      o.greedy_tokens = preset->max_tokens;
      o.tensor_errors = false;
      const QuantReport r = make_quant_report(o);
      QCOMPARE(value(row, "perplexity"), r.text.ppl_quant);
      QCOMPARE(value(row, "KL vs stored"), r.text.kl_mean);
      QCOMPARE(value(row, "greedy agree %"), 100.0 * r.greedy.n_same / r.greedy.n_tokens);
      QCOMPARE(value(row, "weights MiB") * 1024 * 1024 < 1.05 * double(r.weight_bytes_after), true);
    }
    // The stored weights against themselves: no change at all.
    QCOMPARE(value(0, "KL vs stored"), 0.0);
    QCOMPARE(value(0, "ppl vs stored %"), 0.0);
    QCOMPARE(value(0, "greedy agree %"), 100.0);
    // Smaller and (slightly) worse, in that order.
    QVERIFY(value(1, "weights MiB") < 0.5 * value(0, "weights MiB"));
    QVERIFY(value(2, "weights MiB") < value(1, "weights MiB"));
    QVERIFY(value(2, "KL vs stored") > value(1, "KL vs stored"));
    QVERIFY(value(1, "KL vs stored") > 0.0);

    // Every output line is visible: the pane grows with its rows instead of cutting them.
    QTextBrowser* outputs = view()->outputs_browser();
    QVERIFY(outputs->document()->size().height() > 3 * outputs->fontMetrics().height());   // wrapped rows
    QVERIFY(QTest::qWaitFor([&] { return outputs->verticalScrollBar()->maximum() == 0; }, 2000));
  }

  // The KV preset runs the same prompts over f32, f16 and int8 K/V: the pool shrinks to half
  // (f16) and about a quarter plus scales (int8) of f32's for the same blocks, f16 keeps
  // f32's greedy tokens on these prompts, and every row's tokens are real text.
  void kv_preset_compares_f32_f16_and_int8_pools() {
    const auto& presets = view()->presets();
    const auto preset = std::find_if(presets.begin(), presets.end(),
                                     [](const ui::Experiment& e) { return e.name == "KV cache: f32 vs f16 vs int8"; });
    QVERIFY(preset != presets.end());
    view()->set_experiment(*preset);
    QTableWidget* configs = view()->findChild<QTableWidget*>("experiment_configs");
    QVERIFY(configs);
    QCOMPARE(view()->experiment().configs.size(), size_t(3));
    QCOMPARE(view()->experiment().configs[1].kv_dtype, QString("f16"));
    view()->run();
    QVERIFY(QTest::qWaitFor([&] { return !view()->is_running(); }, 120000));
    const auto& results = view()->results();
    QCOMPARE(results.size(), size_t(3));
    for (const auto& r : results) {
      QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
      QCOMPARE(r.token_ids.size(), preset->prompts.size());
    }
    QCOMPARE(results[1].token_ids, results[0].token_ids);
    QTableWidget* table = view()->results_table();
    auto value = [&](int row, const QString& name) {
      for (int c = 0; c < table->columnCount(); ++c)
        if (table->horizontalHeaderItem(c)->text() == name) return table->item(row, c)->data(Qt::UserRole).toDouble();
      return -1.0;
    };
    const double f32 = value(0, "KV pool MiB"), f16 = value(1, "KV pool MiB"), i8 = value(2, "KV pool MiB");
    QVERIFY(f32 > 0);
    QCOMPARE(f16 * 2, f32);
    QVERIFY2(i8 < 0.5 * f32 && i8 > 0.25 * f32, qPrintable(QString("%1 vs %2").arg(i8).arg(f32)));
  }

  // The tensor / pipeline parallel columns: 2 x 2 in-process ranks give the greedy tokens of one
  // rank; the sizes go through the table, a saved experiment and the engine configuration.
  // The doubt threshold column: greedy tokens equal with and without it; it reaches the engine
  // (fewer guesses, a larger share accepted) and survives JSON.
  void draft_threshold_column_keeps_the_tokens_and_raises_acceptance() {
    ui::Experiment e;
    e.prompts = QStringList{"Once upon a time"};
    e.max_tokens = 48;
    ui::ExperimentConfig all = ui::ExperimentConfig::named("self-int4 k 8", 2);
    all.speculative = "self-int4";
    all.spec_k = 8;
    all.spec_p_min = 0;
    ui::ExperimentConfig doubting = all;
    doubting.name = "self-int4 k 8 p 0.8";
    doubting.spec_p_min = 0.8;
    e.configs = {all, doubting};
    view()->set_experiment(e);
    QCOMPARE(view()->experiment().configs[0].spec_p_min, 0.0);
    QCOMPARE(view()->experiment().configs[1].spec_p_min, 0.8);
    QCOMPARE(ui::ExperimentConfig::from_json(doubting.to_json()).spec_p_min, 0.8);
    QCOMPARE(doubting.apply_to(EngineConfig{}).speculative.draft_p_min, 0.8);
    QVERIFY(ui::ExperimentConfig::from_json(ui::ExperimentConfig::named("x").to_json()).spec_p_min < 0);   // auto
    run_two_expecting_the_same_tokens();
    if (QTest::currentTestFailed()) return;
    const auto& results = view()->results();
    auto metric = [](const ui::ExperimentResult& r, const QString& name) {
      for (const auto& [n, v] : r.metrics)
        if (n == name) return v;
      return std::nan("");
    };
    QVERIFY2(metric(results[1], "acceptance %") > metric(results[0], "acceptance %"),
             qPrintable(QString("%1 vs %2").arg(metric(results[1], "acceptance %")).arg(metric(results[0], "acceptance %"))));
  }

  void parallel_columns_give_the_tokens_of_one_rank() {
    ui::Experiment e;
    e.prompts = QStringList{"Once upon a time"};
    e.max_tokens = 16;
    ui::ExperimentConfig one = ui::ExperimentConfig::named("one rank", 2);
    ui::ExperimentConfig four = ui::ExperimentConfig::named("tp 2 x pp 2", 2);
    four.tensor_parallel_size = 2;
    four.pipeline_parallel_size = 2;
    e.configs = {one, four};
    view()->set_experiment(e);
    QCOMPARE(view()->experiment().configs[1].tensor_parallel_size, 2);
    QCOMPARE(view()->experiment().configs[1].pipeline_parallel_size, 2);
    QCOMPARE(ui::ExperimentConfig::from_json(four.to_json()).tensor_parallel_size, 2);
    QCOMPARE(four.apply_to(EngineConfig{}).pipeline_parallel_size, 2);
    run_two_expecting_the_same_tokens();
  }

  // The backend column: each configuration runs on its own backend ("as in Settings" when
  // none is named). A backend this machine cannot run is listed disabled with the reason; a
  // configuration naming it reports that reason as its error and the others still run. With a
  // GPU the CUDA row's greedy tokens equal the CPU row's.
  void backend_column_runs_each_configuration_on_its_backend() {
    const auto& presets = view()->presets();
    const auto preset = std::find_if(presets.begin(), presets.end(),
                                     [](const ui::Experiment& e) { return e.name == "Backend: CPU vs CUDA"; });
    QVERIFY(preset != presets.end());
    view()->set_experiment(*preset);
    QTableWidget* configs = view()->findChild<QTableWidget*>("experiment_configs");
    QVERIFY(configs);
    QCOMPARE(configs->horizontalHeaderItem(1)->text(), QString("backend"));
    auto* cuda_combo = qobject_cast<QComboBox*>(configs->cellWidget(1, 1));
    QVERIFY(cuda_combo);
    QCOMPARE(cuda_combo->currentData().toString(), QString("cuda"));
    std::string why = "not listed";
    for (const BackendInfo& b : list_backends())
      if (b.name == "cuda") why = b.available ? "" : b.reason;
    const int ci = cuda_combo->findData("cuda");
    auto* model = qobject_cast<QStandardItemModel*>(cuda_combo->model());
    QVERIFY(model);
    QCOMPARE(model->item(ci)->isEnabled(), why.empty());
    if (!why.empty()) QCOMPARE(cuda_combo->itemData(ci, Qt::ToolTipRole).toString(), QString::fromStdString(why));
    QCOMPARE(view()->experiment().configs[0].backend, QString("cpu"));
    QCOMPARE(view()->experiment().configs[1].backend, QString("cuda"));
    QCOMPARE(preset->configs[1].apply_to(EngineConfig{}).backend, std::string("cuda"));
    QCOMPARE(ui::ExperimentConfig::named("x").apply_to(EngineConfig{}).backend, EngineConfig{}.backend);

    view()->run();
    QVERIFY(QTest::qWaitFor([&] { return !view()->is_running(); }, 120000));
    const auto& results = view()->results();
    QCOMPARE(results.size(), size_t(2));
    QVERIFY2(results[0].error.isEmpty(), qPrintable(results[0].error));
    QCOMPARE(results[0].token_ids.size(), size_t(preset->prompts.size()));
    if (why.empty()) {
      QVERIFY2(results[1].error.isEmpty(), qPrintable(results[1].error));
      QCOMPARE(results[1].token_ids, results[0].token_ids);
    } else {
      QVERIFY2(results[1].error.contains("'cuda' is not available"), qPrintable(results[1].error));
    }

    // A saved file naming a backend this build does not know keeps it; the run says why.
    ui::Experiment e = two_configurations();
    e.configs[1].backend = "tpu";
    view()->set_experiment(e);
    QCOMPARE(view()->experiment().configs[1].backend, QString("tpu"));
    QCOMPARE(view()->experiment().configs[0].backend, QString());
  }
};

QTEST_MAIN(TestExperimentsView)
#include "test_experiments_view.moc"
