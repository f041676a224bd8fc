// request_queue.h — the one door between HTTP handler threads and the thread that steps the
// engine. Handlers submit() requests (thread-safe, bounded: a full queue is refused, the caller
// answers 429); the stepping thread, between two steps, calls admit() — new requests enter the
// engine, cancelled ones are aborted there (their KV blocks return to the pool at once) — and
// after each step deliver(), which routes every output to its request's channel. So all HTTP
// requests share the engine's steps (continuous batching) and its prefix cache, and only the
// stepping thread ever touches the engine. The CLI's EngineLoop and the GUI's EngineWorker are
// the two stepping threads.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "llmwb/engine.h"
#include "request_channel.h"
#include "server_metrics.h"

namespace llmwb::server {

using Clock = std::chrono::steady_clock;

// What a handler submits: one engine request per prompt, added by the stepping thread.
struct ServedRequest {
  // Each adds one prompt to the engine and returns its request id; throws llmwb::Error when the
  // engine refuses it (too long for the context, bad parameters).
  std::vector<std::function<uint64_t(Engine&)>> prompts;
  bool want_token_text = false;   // logprobs: send each token's text along
  std::shared_ptr<RequestChannel> channel = std::make_shared<RequestChannel>();
  Clock::time_point arrival = Clock::now();
  // What the server's request list shows (the GUI's Server panel).
  std::string endpoint;
  uint64_t serial = 0;   // set by submit()
};

// One row of the live request list.
struct RequestRow {
  uint64_t serial = 0;
  std::string endpoint;
  std::string state;          // "queued", "running", "finished", "aborted", "refused"
  size_t prompt_tokens = 0, completion_tokens = 0;
  double ttft = -1;           // seconds, -1 until the first token
  double tokens_per_second = 0;
};

class RequestQueue {
 public:
  explicit RequestQueue(size_t max_in_flight);

  // --- HTTP threads
  // False when max_in_flight requests are queued or running (the caller answers 429).
  bool submit(const std::shared_ptr<ServedRequest>& r);
  // The model's id for /v1/models and the `model` field, and whether one is loaded (/health).
  std::string model_id() const;
  bool ready() const;
  int context_length() const;
  size_t in_flight() const;
  ServerMetrics& metrics() { return metrics_; }
  // The most recent requests, newest last (at most `max_rows` are kept).
  std::vector<RequestRow> rows() const;

  // Called after each submit (the GUI wakes its worker with it); set before serving starts.
  void set_wakeup(std::function<void()> wakeup) { wakeup_ = std::move(wakeup); }

  // --- the stepping thread
  void set_model(const std::string& id, bool ready, int context_length = 0);
  // New requests into the engine, cancelled ones aborted.
  void admit(Engine& engine);
  // Routes outputs to their channels and updates the metrics; returns the outputs of requests
  // that are not the server's (the GUI's own), untouched.
  std::vector<RequestOutput> deliver(std::vector<RequestOutput> outputs, const Engine& engine);
  // Whether requests wait to be admitted.
  bool has_submissions() const;
  // Sleeps until a submission arrives or `timeout` passes (an idle stepping thread).
  void wait_for_submissions(std::chrono::milliseconds timeout);
  // Fails every request, queued or in the engine (aborted there when `engine` is given):
  // shutdown, or the model unloaded.
  void fail_all(Engine* engine, const std::string& why);

  static constexpr size_t max_rows = 200;

 private:
  struct Active {
    std::shared_ptr<ServedRequest> request;
    std::vector<uint64_t> engine_ids;
    size_t unfinished = 0;
    bool aborted = false;
    bool first_token = false;
    std::map<uint64_t, size_t> tokens_seen;   // engine id -> tokens of all its samples so far
    std::map<uint64_t, std::vector<size_t>> texted;   // engine id -> tokens per sample given text
    Clock::time_point first, last;
    size_t prompt_tokens = 0, completion_tokens = 0;
  };
  void update_row(const Active& a, const char* state);

  const size_t max_in_flight_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<ServedRequest>> submitted_;   // guarded by mu_
  size_t in_flight_ = 0;                                    // guarded by mu_
  std::string model_id_;                                    // guarded by mu_
  bool ready_ = false;                                      // guarded by mu_
  int context_length_ = 0;                                  // guarded by mu_
  std::map<uint64_t, RequestRow> rows_;                     // guarded by mu_, by serial
  uint64_t next_serial_ = 1;                                // guarded by mu_
  std::function<void()> wakeup_;
  // Stepping thread only.
  std::vector<std::unique_ptr<Active>> active_;
  std::map<uint64_t, std::pair<Active*, int>> by_engine_id_;   // -> (request, prompt index)
  std::set<uint64_t> swallow_;   // aborted engine ids whose last output is nobody's
  void release(const std::string& state, const Active& a);
  ServerMetrics metrics_;
};

}  // namespace llmwb::server
