// Help ▸ About shows what `llmwb-cli --version` prints: version, commit and build options, from
// the one place they are kept (llmwb/build_info.h).
#include <QAction>
#include <QApplication>
#include <QMenuBar>
#include <QMessageBox>
#include <QTest>
#include <QTimer>

#include "llmwb/build_info.h"
#include "main_window.h"

using namespace llmwb;

class TestAboutBox : public QObject {
  Q_OBJECT

 private slots:
  void about_names_the_version_commit_and_build_options() {
    ui::MainWindow window;
    window.show();
    QAction* about = nullptr;
    for (QAction* menu : window.menuBar()->actions())
      if (menu->menu() && menu->text() == "&Help")
        for (QAction* a : menu->menu()->actions())
          if (a->text() == "&About") about = a;
    QVERIFY2(about, "no Help > About");

    QString shown;
    QTimer::singleShot(0, this, [&shown] {
      auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
      if (!box) return;
      shown = box->text();
      box->accept();
    });
    about->trigger();

    const BuildInfo& b = build_info();
    QVERIFY2(shown.contains(QString::fromStdString("llmwb " + b.version + " (commit " + b.commit + ")")),
             qPrintable(shown));
    for (const std::string& line : {"build: " + b.build_type, "CPU kernels: " + b.simd_levels,
                                    std::string("CUDA backend: ") + (b.cuda ? "on" : "off")})
      QVERIFY2(shown.contains(QString::fromStdString(line).toHtmlEscaped()),
               qPrintable(QString::fromStdString(line) + " in " + shown));
  }
};

QTEST_MAIN(TestAboutBox)
#include "test_about_box.moc"
