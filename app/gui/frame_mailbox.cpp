#include "frame_mailbox.h"

#include <algorithm>

namespace llmwb::gui {

namespace {

// Appends `later` (the same generation, newer) to `d`: tokens and text concatenate, counters
// and times are the newer ones, and a finish carries over.
void merge(ui::TokenDelta& d, ui::TokenDelta&& later) {
  d.token_ids.insert(d.token_ids.end(), later.token_ids.begin(), later.token_ids.end());
  d.token_probs.insert(d.token_probs.end(), later.token_probs.begin(), later.token_probs.end());
  d.token_from_draft.insert(d.token_from_draft.end(), later.token_from_draft.begin(), later.token_from_draft.end());
  for (const auto& span : later.draft_spans) {
    if (!d.draft_spans.empty() && d.draft_spans.back().second == span.first) d.draft_spans.back().second = span.second;
    else d.draft_spans.push_back(span);
  }
  d.speculative = std::move(later.speculative);
  d.text += later.text;
  d.num_prompt_tokens = later.num_prompt_tokens;
  d.num_output_tokens = later.num_output_tokens;
  d.time_to_first_token = later.time_to_first_token;
  d.total_time = later.total_time;
  if (later.finished) {
    d.finished = true;
    d.finish_reason = later.finish_reason;
    d.final_text = std::move(later.final_text);
    d.error = std::move(later.error);
    d.prompt_token_ids = std::move(later.prompt_token_ids);
  }
}

}  // namespace

FrameMailbox::FrameMailbox(int frame_interval_ms, QObject* parent)
    : QObject(parent), interval_ms_(std::max(1, frame_interval_ms)) {
  timer_.setSingleShot(true);
  connect(&timer_, &QTimer::timeout, this, [this] { deliver(false); });
}

void FrameMailbox::post(Mail mail, bool urgent) {
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    for (ui::TokenDelta& d : mail.deltas) {
      // A finished generation is never continued: a new piece of the same ticket after a
      // finish cannot happen, so the last entry of the ticket is the one to extend.
      auto it = std::find_if(box_.deltas.rbegin(), box_.deltas.rend(),
                             [&](const ui::TokenDelta& b) { return b.ticket == d.ticket && !b.finished; });
      if (it != box_.deltas.rend()) merge(*it, std::move(d));
      else box_.deltas.push_back(std::move(d));
    }
    if (box_.steps.empty()) box_.steps = std::move(mail.steps);
    else box_.steps.insert(box_.steps.end(), mail.steps.begin(), mail.steps.end());
    if (mail.latest) box_.latest = std::move(mail.latest);
    if (urgent && !urgent_posted_) {
      urgent_posted_ = wake_posted_ = wake = true;
    } else if (!wake_posted_) {
      wake_posted_ = wake = true;
      urgent = false;
    } else {
      urgent = false;
    }
  }
  if (wake) {
    wakeups_.fetch_add(1, std::memory_order_relaxed);
    QMetaObject::invokeMethod(this, [this, urgent] { on_wakeup(urgent); }, Qt::QueuedConnection);
  }
}

void FrameMailbox::drop_telemetry() {
  std::lock_guard lock(mutex_);
  box_.steps.clear();
  box_.latest.reset();
  want_snapshot_ = true;
}

void FrameMailbox::set_frame_interval_ms(int ms) { interval_ms_ = std::max(1, ms); }

void FrameMailbox::hold(bool on) {
  if (on == held_) return;
  held_ = on;
  if (!held_) deliver(true);
}

void FrameMailbox::on_wakeup(bool urgent) {
  if (held_) {  // the release delivers
    if (!urgent) return;
    bool finish = false;
    {
      std::lock_guard lock(mutex_);
      finish = std::any_of(box_.deltas.begin(), box_.deltas.end(), [](const ui::TokenDelta& d) { return d.finished; });
      // This urgent wake-up is used up: a finish posted after it (the first token's) wakes again.
      urgent_posted_ = false;
    }
    if (finish) emit finish_held();
    return;
  }
  if (urgent || !since_delivery_.isValid() || since_delivery_.elapsed() >= interval_ms_) {
    deliver(urgent);
  } else if (!timer_.isActive()) {
    timer_.start(int(interval_ms_ - since_delivery_.elapsed()));
  }
  // else: a pull is already due; it empties the box.
}

void FrameMailbox::deliver(bool everything) {
  timer_.stop();
  // Held: the wake-up flags stay set, so the engine posts without waking this thread.
  if (held_) return;
  // Due half a frame early: with frames of 16 ms, text every 33 ms rather than every 48.
  const bool text = everything || text_interval_ms_ <= interval_ms_ || !since_text_.isValid() ||
                    since_text_.elapsed() + interval_ms_ / 2 >= text_interval_ms_;
  Mail mail;
  bool pulling = false, got = false;
  {
    std::lock_guard lock(mutex_);
    if (text) {
      std::swap(mail, box_);
    } else {  // telemetry only; the deltas stay, merged, for the next text delivery
      std::swap(mail.steps, box_.steps);
      std::swap(mail.latest, box_.latest);
    }
    got = !(mail.deltas.empty() && mail.steps.empty() && !mail.latest);
    // While results keep coming the receiver pulls by its own timer, and the engine thread
    // need not wake it: wake_posted_ stays set until a pull finds the box empty.
    pulling = got || !box_.deltas.empty();
    wake_posted_ = pulling;
    urgent_posted_ = false;
  }
  if (!pulling) return;  // idle again (or a wake-up overtaken by a delivery)
  timer_.start(interval_ms_);
  if (!got) return;  // only text, waiting for its interval
  want_snapshot_ = true;
  since_delivery_.start();
  if (!mail.deltas.empty()) since_text_.start();
  ++deliveries_;
  for (const ui::TokenDelta& d : mail.deltas) emit tokens(d);
  if (!mail.steps.empty() || mail.latest) {
    ui::TelemetryFrame frame;
    frame.steps = std::move(mail.steps);
    frame.latest = std::move(mail.latest);
    emit telemetry(frame);
  }
}

}  // namespace llmwb::gui
