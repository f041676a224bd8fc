// frame_mailbox.h — how generation results cross from the engine thread to the GUI thread.
//
// At 4000 tokens a second a queued signal per step (or even per frame from the engine's side,
// timed by the engine) costs the engine thread an event allocation, argument copies and a
// wake-up of the GUI thread far more often than anyone can see. The mailbox turns delivery
// around: the engine thread only appends to a mutex-protected box (token deltas merged per
// generation, one compact record per step) and wakes the GUI thread only when the box was
// empty and no pull is due; the GUI thread empties the box at most once per frame interval
// (the Workbench sets it: the screen's frame while a live chart is on screen, 33 ms otherwise),
// emits the results as ordinary signals in its own thread and, while results keep coming,
// pulls again by its own timer one interval later. A steady stream therefore costs the engine
// thread no wake-up at all and the GUI thread one timer per frame, a burst of any length at
// most one wake-up, and the full telemetry snapshot (block maps, sequences, attention) is
// copied by the engine at most once per delivery, when the GUI asked for the next one.
//
// What a user waits for is delivered at once ("urgent"): the first token of a generation,
// every finish, error and abort, and every step in slow motion. Deltas of one generation are
// merged in order, so text and token ids arrive complete and in order, and a finish always
// comes after the tokens before it.
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "telemetry_frame.h"
#include "token_delta.h"

namespace llmwb::gui {

class FrameMailbox : public QObject {
  Q_OBJECT

 public:
  // What one engine step (or an abort/error outside a step) hands over.
  struct Mail {
    std::vector<ui::TokenDelta> deltas;             // in order; several per ticket allowed
    std::vector<ui::StepRecord> steps;              // oldest first
    std::shared_ptr<const StepTelemetry> latest;    // the newest full snapshot, if taken
  };

  // Lives in the thread that creates it (the GUI thread): signals are emitted there.
  explicit FrameMailbox(int frame_interval_ms = 33, QObject* parent = nullptr);

  // --- any thread (the engine's) ---
  // Merges `mail` into the box; wakes the receiving thread if the box was empty, or at once
  // if `urgent` and no urgent wake-up is already on its way.
  void post(Mail mail, bool urgent);
  // True once after every delivery (and at the start): the engine should attach a full
  // snapshot to its next post. Taking it clears it.
  bool take_snapshot_request() { return want_snapshot_.exchange(false, std::memory_order_acq_rel); }
  // Drops the telemetry not yet delivered (the engine that produced it is gone).
  void drop_telemetry();

  // --- the receiving thread ---
  int frame_interval_ms() const { return interval_ms_; }
  // The shortest time between two deliveries from now on (at least 1 ms).
  void set_frame_interval_ms(int ms);
  // The shortest time between two deliveries of text (token deltas), when longer than the
  // frame interval: the charts then get every frame and the text panes, whose repaint at
  // 4000 tok/s costs more than a chart's, every other one. Urgent deltas (first token, finish)
  // still go at once. 0 (the default): text goes with every delivery.
  void set_text_interval_ms(int ms) { text_interval_ms_ = std::max(0, ms); }
  // Deliveries made (box emptied with something in it) and wake-ups the engine thread posted,
  // for tests and the GUI benchmark: deliveries stay near the frame rate however many tokens
  // pass through, and wake-ups near the number of urgent events and idle-to-busy transitions.
  long deliveries() const { return deliveries_; }
  long wakeups() const { return wakeups_.load(std::memory_order_relaxed); }
  // Holding stops deliveries (the GUI benchmark's quiet phases, bench_mode.h): the engine
  // posts exactly as before and its results wait, merged, in the box; nothing wakes or runs in
  // the receiving thread. Releasing delivers the backlog at once.
  void hold(bool on);
  bool held() const { return held_; }

 signals:
  void tokens(const llmwb::ui::TokenDelta& delta);
  void telemetry(const llmwb::ui::TelemetryFrame& frame);
  // While held: a finish (or an error or abort) is waiting; the engine may be idle until it
  // is delivered. A held first token does not emit it: the engine goes on generating.
  void finish_held();

 private:
  void on_wakeup(bool urgent);
  // `everything`: the text too, however recent the last text delivery.
  void deliver(bool everything);

  int interval_ms_;
  std::mutex mutex_;
  Mail box_;                  // guarded by mutex_
  // Guarded by mutex_: a wake-up is queued or a pull is due, so posting need not wake.
  bool wake_posted_ = false;
  bool urgent_posted_ = false;  // guarded by mutex_: the same for an urgent one
  std::atomic<bool> want_snapshot_{true};
  std::atomic<long> wakeups_{0};
  // Receiving thread only.
  QElapsedTimer since_delivery_;
  QElapsedTimer since_text_;
  int text_interval_ms_ = 0;
  QTimer timer_;
  long deliveries_ = 0;
  bool held_ = false;
};

}  // namespace llmwb::gui
