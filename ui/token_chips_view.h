// token_chips_view.h — generated tokens as chips; the chip's tint is the token's probability
// and hovering shows the token id and probability. With speculative decoding, a token that was
// a draft guess the target accepted is underlined with a thick bar (kDraftColor), as LM
// Studio's "visualize accepted draft tokens" does.
//
// Tokens arrive a hundred or more per frame from a fast model, so the view is drawn by hand
// rather than as a QListWidget: appending places only the new chips (a list view re-lays out
// and re-measures every item on each insert), each distinct token's text is shaped once
// (QStaticText, cached by id), painting visits only the rows on screen, and tooltips are
// built on hover instead of per token.
#pragma once

#include <QAbstractScrollArea>
#include <QColor>
#include <QHash>
#include <QStaticText>
#include <QStringList>

#include <vector>

namespace llmwb::ui {

class TokenChipsView : public QAbstractScrollArea {
  Q_OBJECT

 public:
  explicit TokenChipsView(QWidget* parent = nullptr);

  void set_vocabulary(const QStringList& vocabulary);
  // from_draft (may be shorter or empty): 1 where the token was an accepted draft guess.
  void append(const std::vector<int>& ids, const std::vector<float>& probs,
              const std::vector<uint8_t>& from_draft = {});
  void clear();

  int chip_count() const { return int(chips_.size()); }
  int token_id(int chip) const;
  float token_prob(int chip) const;
  bool from_draft(int chip) const;
  int draft_chip_count() const { return draft_chips_; }
  // The accepted-draft underline, and how many pixels tall it is at the chip's bottom.
  static constexpr QRgb kDraftColor = 0xff1e88e5;
  static constexpr int kDraftBar = 3;
  // What hovering the chip shows: "token ID  "piece"\np = P".
  QString tool_tip(int chip) const;
  // The chip under `pos` (viewport coordinates), -1 when none.
  int chip_at(const QPoint& pos) const;
  // Where the chip is, in viewport coordinates (empty for a bad index).
  QRect chip_rect(int chip) const;
  // Full re-flows of all chips (width changes only; appending never re-flows): tests check
  // that streaming tokens costs no whole-view layout.
  long reflow_count() const { return reflows_; }
  // The chip outlined as selected (the token inspector's), -1 for none.
  int selected() const { return selected_; }
  void set_selected(int chip);

 signals:
  // A chip was clicked (the token inspector opens its step).
  void chip_clicked(int chip);

 protected:
  bool viewportEvent(QEvent* event) override;
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void changeEvent(QEvent* event) override;
  void scrollContentsBy(int dx, int dy) override;

 private:
  int selected_ = -1;
  struct Chip {
    int id = 0;
    float prob = 0.0f;
    QRgb tint = 0;  // from prob, computed once
    bool from_draft = false;
    int x = 0, y = 0, width = 0;  // content coordinates; every row is row_height_ tall
  };
  struct Piece {
    QStaticText text;
    int width = 0;
  };

  const Piece& piece(int id);
  void place(Chip& chip);
  void reflow();
  void update_scroll_range();
  int content_height() const;

  QStringList vocabulary_;
  QHash<int, Piece> pieces_;
  std::vector<Chip> chips_;
  int row_height_ = 0;
  int next_x_ = 0, next_y_ = 0;  // where the next chip goes
  int flow_width_ = 0;           // the width the chips were flowed for
  long reflows_ = 0;
  int draft_chips_ = 0;
};

}  // namespace llmwb::ui
