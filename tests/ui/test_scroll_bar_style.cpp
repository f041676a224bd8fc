// The application's scroll bars (FlatScrollBarStyle): installed by every theme, painted in a
// few solid colours (a gradient, which Qt's raster engine hands to its thread pool, shows as
// many shades), with the handle where the wrapped style places it, and every other control
// still drawn by the wrapped style.
#include <QApplication>
#include <QPushButton>
#include <QScrollBar>
#include <QSet>
#include <QStyleFactory>
#include <QStyleOptionSlider>
#include <QTest>

#include "flat_scroll_bar_style.h"
#include "theme.h"

using namespace llmwb;

namespace {

QImage render(QWidget& w) {
  QImage image(w.size(), QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::magenta);
  w.render(&image);
  return image;
}

QSet<QRgb> colours(const QImage& image, const QRect& area) {
  QSet<QRgb> set;
  for (int y = area.top(); y <= area.bottom(); ++y)
    for (int x = area.left(); x <= area.right(); ++x) set.insert(image.pixel(x, y));
  return set;
}

}  // namespace

class TestScrollBarStyle : public QObject {
  Q_OBJECT

 private slots:
  void every_theme_installs_it_over_the_right_base() {
    for (const QString theme : {"dark", "light", "system", "dark"}) {
      ui::apply_theme(theme);
      auto* style = qobject_cast<ui::FlatScrollBarStyle*>(QApplication::style());
      QVERIFY2(style, qPrintable(theme));
      if (theme != "system") QCOMPARE(style->baseStyle()->name().toLower(), QString("fusion"));
    }
  }

  void scroll_bars_are_flat_and_the_handle_is_where_the_base_puts_it() {
    ui::apply_theme("light");
    QScrollBar bar(Qt::Vertical);
    bar.resize(16, 400);
    bar.setRange(0, 1000);
    bar.setPageStep(200);
    bar.setValue(500);
    const QImage image = render(bar);
    // Whole bar: groove, handle and two arrows, no gradient shades.
    const QSet<QRgb> all = colours(image, image.rect());
    QVERIFY2(all.size() <= 12, qPrintable(QString::number(all.size())));
    // The handle's middle has the handle colour, the groove far from it another.
    QStyleOptionSlider opt;
    opt.initFrom(&bar);
    opt.orientation = Qt::Vertical;
    opt.minimum = bar.minimum();
    opt.maximum = bar.maximum();
    opt.sliderPosition = opt.sliderValue = bar.value();
    opt.pageStep = bar.pageStep();
    opt.singleStep = bar.singleStep();
    opt.subControls = QStyle::SC_All;
    const QRect handle = bar.style()->subControlRect(QStyle::CC_ScrollBar, &opt, QStyle::SC_ScrollBarSlider, &bar);
    QVERIFY(handle.height() > 20);
    const QRgb mid = bar.palette().color(QPalette::Mid).rgb();
    QCOMPARE(image.pixel(handle.center()), mid);
    const QRect groove = bar.style()->subControlRect(QStyle::CC_ScrollBar, &opt, QStyle::SC_ScrollBarGroove, &bar);
    const QPoint far(groove.center().x(), handle.top() > groove.top() + 10 ? groove.top() + 5 : groove.bottom() - 5);
    QVERIFY(image.pixel(far) != mid);
    // Fusion alone paints the same bar with gradient shades: the check above can tell.
    std::unique_ptr<QStyle> fusion(QStyleFactory::create("Fusion"));
    bar.setStyle(fusion.get());
    QVERIFY(colours(render(bar), image.rect()).size() > all.size());
    bar.setStyle(nullptr);
  }

  void other_controls_are_the_base_styles() {
    ui::apply_theme("light");
    QPushButton button("OK");
    button.resize(100, 30);
    const QImage ours = render(button);
    std::unique_ptr<QStyle> fusion(QStyleFactory::create("Fusion"));
    button.setStyle(fusion.get());
    QCOMPARE(render(button), ours);
    button.setStyle(nullptr);
  }
};

QTEST_MAIN(TestScrollBarStyle)
#include "test_scroll_bar_style.moc"
