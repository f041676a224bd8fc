#include "engine_loop.h"

#include <chrono>

namespace llmwb::server {

void EngineLoop::start(const EngineConfig& config, const std::string& model_id) {
  stop_ = false;
  thread_ = std::thread([this, config, model_id] { run(config, model_id); });
}

void EngineLoop::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

std::string EngineLoop::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

void EngineLoop::run(EngineConfig config, std::string model_id) {
  std::unique_ptr<Engine> engine;
  try {
    engine = std::make_unique<Engine>(config, [this](double, const std::string&) { return !stop_.load(); });
  } catch (const std::exception& e) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      error_ = e.what();
    }
    failed_ = true;
    queue_.fail_all(nullptr, std::string("the model failed to load: ") + e.what());
    return;
  }
  queue_.set_model(model_id, true, engine->model_info().context_length);
  loaded_ = true;
  while (!stop_) {
    queue_.admit(*engine);
    if (!engine->has_unfinished()) {
      queue_.wait_for_submissions(std::chrono::milliseconds(50));
      continue;
    }
    queue_.deliver(engine->step(), *engine);
  }
  queue_.set_model(model_id, false, engine->model_info().context_length);
  queue_.fail_all(engine.get(), "the server is shutting down");
}

}  // namespace llmwb::server
