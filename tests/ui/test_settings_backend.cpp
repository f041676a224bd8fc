// The backend choice in Settings: every backend is listed; one this build or machine cannot
// run (CUDA without a device) is disabled with the reason as its tooltip and never selected;
// the choice reaches EngineConfig::backend and survives a save and load.
#include <QComboBox>
#include <QSettings>
#include <QStandardItemModel>
#include <QTest>

#include "app_settings.h"
#include "llmwb/backends.h"
#include "settings_dialog.h"

using namespace llmwb;

class TestSettingsBackend : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("llmwb-test-settings-backend");
    QSettings().clear();
  }

  void every_backend_is_listed_and_unavailable_ones_are_disabled_with_the_reason() {
    ui::AppSettings s;
    s.backend = "cuda";
    ui::SettingsDialog d(s);
    QComboBox* box = d.backend_box();
    const auto backends = list_backends();
    QCOMPARE(box->count(), int(backends.size()));
    auto* model = qobject_cast<QStandardItemModel*>(box->model());
    QVERIFY(model);
    for (int i = 0; i < box->count(); ++i) {
      const BackendInfo& b = backends[size_t(i)];
      QCOMPARE(box->itemData(i).toString(), QString::fromStdString(b.name));
      QCOMPARE(model->item(i)->isEnabled(), b.available);
      if (!b.available) QCOMPARE(box->itemData(i, Qt::ToolTipRole).toString(), QString::fromStdString(b.reason));
    }
    // CUDA was asked for: selected when it can run, else the dialog falls back to the CPU.
    const bool cuda_ok = backends[1].available;
    QCOMPARE(d.settings().backend, QString(cuda_ok ? "cuda" : "cpu"));
  }

  void the_choice_reaches_the_engine_config_and_persists() {
    ui::AppSettings s;
    s.backend = "cuda";
    QCOMPARE(s.engine_config("m.gguf", "").backend, std::string("cuda"));
    s.save();
    QCOMPARE(ui::AppSettings::load().backend, QString("cuda"));
    s.backend = "cpu";
    s.save();
    ui::SettingsDialog d(ui::AppSettings::load());
    QCOMPARE(d.settings().backend, QString("cpu"));
    QCOMPARE(d.settings().engine_config("m.gguf", "").backend, std::string("cpu"));
  }

  void cleanupTestCase() { QSettings().clear(); }
};

QTEST_MAIN(TestSettingsBackend)
#include "test_settings_backend.moc"
