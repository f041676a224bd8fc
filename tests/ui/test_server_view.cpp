// The Server panel: Start serves the loaded model on a free port through the same EngineWorker
// as the GUI's own generations; an HTTP request (httplib's client, another thread) gets its
// completion and shows in the live request list with its tokens; the GUI thread keeps turning
// meanwhile; Stop closes the port.
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QTest>

#include <httplib.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "server_view.h"
#include "ui_test_support.h"

using namespace llmwb;

class TestServerView : public QObject {
  Q_OBJECT

 private:
  std::unique_ptr<gui::Workbench> bench_;

 private slots:
  void initTestCase() {
    bench_ = uitest::start_application(ui::MainWindow::View::Chat);
    QVERIFY(uitest::open_model_and_wait(bench_->window(), uitest::stories_gguf()));
  }

  void cleanupTestCase() { bench_.reset(); }

  void the_panel_serves_the_loaded_model_and_lists_its_requests() {
    ui::ServerView* view = bench_->window().server_view();
    QVERIFY(view->start_button()->isEnabled());
    view->port_edit()->setValue(0);   // any free port
    QTest::mouseClick(view->start_button(), Qt::LeftButton);
    QVERIFY(bench_->server().running());
    QVERIFY(view->address().startsWith("http://127.0.0.1:"));
    QVERIFY(!view->start_button()->isEnabled());
    const int port = bench_->server().port();
    QVERIFY(port > 0);

    std::atomic<int> status{0};
    std::string body;
    uitest::EventLoopProbe probe;
    std::thread client([&] {
      httplib::Client c("127.0.0.1", port);
      c.set_read_timeout(60, 0);
      // The worker may still be taking the queue: /health says 503 until it has.
      for (int i = 0; i < 200; ++i) {
        auto h = c.Get("/health");
        if (h && h->status == 200) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      auto r = c.Post("/v1/chat/completions",
                      R"({"messages":[{"role":"user","content":"Tell me a story."}],"max_tokens":24,"temperature":0})",
                      "application/json");
      if (r) body = r->body;
      status = r ? r->status : -1;
    });
    QVERIFY(QTest::qWaitFor([&] { return status.load() != 0; }, 60000));
    client.join();
    QCOMPARE(status.load(), 200);
    const auto j = nlohmann::json::parse(body);
    QCOMPARE(j["usage"]["completion_tokens"].get<int>(), 24);
    QVERIFY2(probe.max_gap_ms() < 1000, qPrintable(QString::number(probe.max_gap_ms())));

    QTableWidget* table = view->request_table();
    QVERIFY(QTest::qWaitFor([&] { return table->rowCount() == 1 && table->item(0, 2)->text() == "finished"; }, 5000));
    QCOMPARE(table->item(0, 1)->text(), QString("chat"));
    QCOMPARE(table->item(0, 4)->text(), QString("24"));
    QVERIFY(table->item(0, 3)->text().toInt() > 0);

    QTest::mouseClick(view->stop_button(), Qt::LeftButton);
    QVERIFY(!bench_->server().running());
    QVERIFY(view->start_button()->isEnabled());
    httplib::Client after("127.0.0.1", port);
    QVERIFY(!after.Get("/health"));
  }
};

QTEST_MAIN(TestServerView)
#include "test_server_view.moc"
