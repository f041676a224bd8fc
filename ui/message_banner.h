// message_banner.h — a dismissable strip at the top of the window for errors and notices.
// A banner, not a modal box: the application stays usable (and testable) while it shows.
#pragma once

#include <QFrame>

class QLabel;

namespace llmwb::ui {

class MessageBanner : public QFrame {
  Q_OBJECT

 public:
  enum class Kind { Info, Error };
  explicit MessageBanner(QWidget* parent = nullptr);

  void show_message(Kind kind, const QString& text);
  QString text() const;
  Kind kind() const { return kind_; }

 private:
  QLabel* label_;
  Kind kind_ = Kind::Info;
};

}  // namespace llmwb::ui
