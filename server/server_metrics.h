// server_metrics.h — what GET /metrics reports, in Prometheus' text format with vLLM's metric
// names (docs/SERVER.md lists them): the engine's queue and KV cache from its step telemetry,
// token counters and latency histograms from the requests served over HTTP. The stepping thread
// writes, HTTP threads read; one mutex, held for microseconds.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "llmwb/outputs.h"
#include "llmwb/telemetry.h"

namespace llmwb::server {

// A Prometheus histogram: cumulative bucket counts, sum and count.
struct Histogram {
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double v);
  std::vector<double> bounds;
  std::vector<uint64_t> counts;   // per bucket (not cumulative), then +Inf last
  double sum = 0;
  uint64_t count = 0;
};

class ServerMetrics {
 public:
  ServerMetrics();
  void set_model_name(const std::string& name);
  // After each engine step; `queued` = requests submitted over HTTP not yet in the engine.
  void on_step(const StepTelemetry& t, size_t queued);
  void on_queued_changed(size_t queued);
  void on_first_token(double seconds_since_arrival);
  void on_inter_token(double seconds);
  void on_finished(size_t prompt_tokens, size_t generation_tokens, FinishReason why);
  void on_rejected();   // 429: the queue was full

  int blocks_used() const;
  std::string prometheus_text() const;

 private:
  mutable std::mutex mu_;
  std::string model_;
  int running_ = 0, waiting_ = 0, blocks_used_ = 0, blocks_total_ = 0, blocks_cached_ = 0;
  size_t queued_ = 0;
  uint64_t preemptions_ = 0, prefix_hits_ = 0, prefix_queries_ = 0;
  uint64_t prompt_tokens_ = 0, generation_tokens_ = 0, rejected_ = 0;
  uint64_t finished_stop_ = 0, finished_length_ = 0, finished_abort_ = 0;
  Histogram ttft_, tpot_;
};

}  // namespace llmwb::server
