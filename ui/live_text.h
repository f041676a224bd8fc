// live_text.h — a word-wrapped line of text that changes while tokens stream (generation
// statistics, the KV legend), without ever re-laying out the window.
//
// QLabel::setText always calls updateGeometry(), and a layout activation climbs from parent to
// parent up to the main window; the central QTabWidget answers every layout request by
// repainting itself whole (tab bar, group boxes, spin boxes...). With a label updated at frame
// rate that was most of the GUI thread's time. LiveText has a fixed height of `lines` lines and
// takes whatever width its layout gives it, so setText() only repaints its own rectangle.
// Text that does not fit is cut at the last line.
#pragma once

#include <QString>
#include <QWidget>

namespace llmwb::ui {

class LiveText : public QWidget {
  Q_OBJECT

 public:
  explicit LiveText(int lines, QWidget* parent = nullptr);

  void setText(const QString& text);
  QString text() const { return text_; }

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void changeEvent(QEvent* event) override;

 private:
  int text_height() const;

  int lines_;
  QString text_;
};

}  // namespace llmwb::ui
