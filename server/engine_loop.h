// engine_loop.h — the stepping thread of `llmwb-cli serve`: loads the model, then, while the
// server runs, admits queued requests and steps the engine whenever it has work, sleeping on
// the queue when it has none. The only thread that touches the Engine.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "llmwb/engine.h"
#include "request_queue.h"

namespace llmwb::server {

class EngineLoop {
 public:
  explicit EngineLoop(RequestQueue& queue) : queue_(queue) {}
  ~EngineLoop() { stop(); }

  // Loads `config` on the loop's thread (GET /health answers 503 meanwhile), then serves.
  // `model_id` names the model in /v1/models and the `model` field.
  void start(const EngineConfig& config, const std::string& model_id);
  // Fails the requests in flight and joins.
  void stop();
  // Set when loading failed (the loop has ended).
  bool failed() const { return failed_.load(); }
  std::string error() const;
  bool loaded() const { return loaded_.load(); }

 private:
  void run(EngineConfig config, std::string model_id);

  RequestQueue& queue_;
  std::thread thread_;
  std::atomic<bool> stop_{false}, failed_{false}, loaded_{false};
  mutable std::mutex mu_;
  std::string error_;
};

}  // namespace llmwb::server
