// request_channel.h — one HTTP request's mailbox: the engine-stepping thread pushes events
// (accepted or refused, then each step's output), the HTTP handler thread waits for them.
// Either side may cancel: the handler when its client went away, and the queue then aborts the
// engine requests at its next turn.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "llmwb/outputs.h"

namespace llmwb::server {

struct ChannelEvent {
  enum class Kind {
    Accepted,  // every prompt is queued in the engine
    Refused,   // the engine would not take a prompt (`error`); nothing of the request runs
    Output,    // a step's output for prompt `prompt_index`
    Failed,    // the server stopped or the model went away (`error`)
  };
  ChannelEvent() = default;
  explicit ChannelEvent(Kind k, int prompt = 0) : kind(k), prompt_index(prompt) {}
  Kind kind = Kind::Output;
  int prompt_index = 0;
  RequestOutput output;
  std::string error, error_where;               // Refused: llmwb::Error's message and where()
  std::map<int, std::string> token_text;        // with logprobs: the text of each token in `output`
};

class RequestChannel {
 public:
  void push(ChannelEvent e);
  // Waits up to `timeout` for events and takes them all; empty on timeout.
  std::vector<ChannelEvent> wait(std::chrono::milliseconds timeout);
  void cancel() { cancelled_.store(true, std::memory_order_release); }
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<ChannelEvent> events_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace llmwb::server
