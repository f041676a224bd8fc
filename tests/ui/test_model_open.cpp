// Opening models through the path File ▸ Open uses: a corrupt file shows an error and leaves
// the application usable; a missing path is refused; the recent list remembers what opened.
#include <QFile>
#include <QFileInfo>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTest>

#include "app_settings.h"
#include "completion_view.h"
#include "message_banner.h"
#include "sampling_params_editor.h"
#include "ui_test_support.h"

using namespace llmwb;

class TestModelOpen : public QObject {
  Q_OBJECT

 private:
  std::unique_ptr<gui::Workbench> bench_;

 private slots:
  void initTestCase() {
    bench_ = uitest::start_application(ui::MainWindow::View::Completion);
  }

  void cleanupTestCase() { bench_.reset(); }

  void a_missing_path_is_refused_with_a_message() {
    QVERIFY(!bench_->window().open_model("/nonexistent/model.gguf"));
    QVERIFY(bench_->window().banner()->isVisible());
    QVERIFY(bench_->window().banner()->text().contains("/nonexistent/model.gguf"));
    QVERIFY(!bench_->window().is_loading());
  }

  void cancelling_an_open_leaves_no_model_and_says_so() {
    ui::MainWindow& w = bench_->window();
    QVERIFY(w.open_model(uitest::stories_gguf()));
    QVERIFY(w.is_loading());
    w.cancel_load();  // what the status bar's Cancel button does
    QVERIFY(QTest::qWaitFor([&] { return !w.is_loading(); }, 60000));
    QVERIFY(!w.is_model_loaded());
    QVERIFY(w.banner()->isVisible());
    QCOMPARE(w.banner()->kind(), ui::MessageBanner::Kind::Info);
    QVERIFY2(w.banner()->text().contains("cancelled"), qPrintable(w.banner()->text()));
    QVERIFY(!w.completion_view()->generate_button()->isEnabled());
  }

  void a_corrupt_model_shows_an_error_and_the_application_stays_usable() {
    // A GGUF header that promises more than the file holds.
    const QString path = uitest::scratch_dir("corrupt") + "/corrupt.gguf";
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    QByteArray bytes("GGUF");
    bytes += QByteArray("\x03\x00\x00\x00", 4);
    bytes += QByteArray(8, '\x7f');  // tensor count
    bytes += QByteArray(8, '\x7f');  // metadata count
    bytes += QByteArray(40, '\x01');
    f.write(bytes);
    f.close();
    ui::MainWindow& w = bench_->window();
    QVERIFY(w.open_model(path));
    QVERIFY(QTest::qWaitFor([&] { return !w.is_loading(); }, 60000));
    QVERIFY(!w.is_model_loaded());
    QVERIFY(w.banner()->isVisible());
    QCOMPARE(w.banner()->kind(), ui::MessageBanner::Kind::Error);
    QVERIFY2(w.banner()->text().contains("corrupt.gguf"), qPrintable(w.banner()->text()));
    QVERIFY(!w.completion_view()->generate_button()->isEnabled());

    // Still usable: the real model opens and generates.
    QVERIFY(uitest::open_model_and_wait(w, uitest::stories_gguf()));
    QVERIFY(!w.banner()->isVisible());
    ui::CompletionView* c = w.completion_view();
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    greedy.max_tokens = 8;
    c->sampling()->set_params(greedy);
    c->prompt_editor()->setPlainText("Once upon a time");
    c->generate();
    QVERIFY(QTest::qWaitFor([&] { return !c->is_generating(); }, 60000));
    QCOMPARE(c->generated_tokens(), 8);
    QVERIFY(!c->output_text().isEmpty());
  }

  void the_recent_models_list_remembers_the_opened_model() {
    const QStringList recent = ui::AppSettings::recent_models();
    QVERIFY(!recent.isEmpty());
    QCOMPARE(recent.first(), QFileInfo(uitest::stories_gguf()).absoluteFilePath());
    QVERIFY(!recent.contains(uitest::scratch_dir("unused") + "/corrupt.gguf"));
  }

  void a_hugging_face_folder_opens() {
    ui::MainWindow& w = bench_->window();
    QVERIFY(uitest::open_model_and_wait(w, uitest::shared_path("models/stories260K/hf")));
    QCOMPARE(QString::fromStdString(w.model_info().format), QString("safetensors"));
  }

  void a_llama2c_checkpoint_opens_with_the_tokenizer_beside_it() {
    ui::MainWindow& w = bench_->window();
    QVERIFY(uitest::open_model_and_wait(w, uitest::shared_path("models/stories260K/stories260K.bin")));
    QCOMPARE(QString::fromStdString(w.model_info().format), QString("llama2c"));
  }
};

QTEST_MAIN(TestModelOpen)
#include "test_model_open.moc"
