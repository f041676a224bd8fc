#include "server_metrics.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace llmwb::server {

Histogram::Histogram(std::vector<double> upper_bounds) : bounds(std::move(upper_bounds)), counts(bounds.size() + 1, 0) {}

void Histogram::observe(double v) {
  const size_t i = static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin());
  ++counts[i];
  sum += v;
  ++count;
}

// vLLM's buckets for the same histograms.
ServerMetrics::ServerMetrics()
    : ttft_({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0,
             80.0, 160.0, 640.0, 2560.0}),
      tpot_({0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}) {}

void ServerMetrics::set_model_name(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  model_ = name;
}

void ServerMetrics::on_step(const StepTelemetry& t, size_t queued) {
  std::lock_guard<std::mutex> lock(mu_);
  running_ = t.num_running;
  waiting_ = t.num_waiting;
  queued_ = queued;
  blocks_used_ = t.blocks_used;
  blocks_total_ = t.blocks_total;
  blocks_cached_ = t.blocks_cached;
  preemptions_ = t.preemptions_total;
  prefix_hits_ = t.prefix_cache_hit_tokens_total;
  prefix_queries_ = t.prefix_cache_queried_tokens_total;
}

void ServerMetrics::on_queued_changed(size_t queued) {
  std::lock_guard<std::mutex> lock(mu_);
  queued_ = queued;
}

void ServerMetrics::on_first_token(double s) {
  std::lock_guard<std::mutex> lock(mu_);
  ttft_.observe(s);
}

void ServerMetrics::on_inter_token(double s) {
  std::lock_guard<std::mutex> lock(mu_);
  tpot_.observe(s);
}

void ServerMetrics::on_finished(size_t prompt_tokens, size_t generation_tokens, FinishReason why) {
  std::lock_guard<std::mutex> lock(mu_);
  prompt_tokens_ += prompt_tokens;
  generation_tokens_ += generation_tokens;
  (why == FinishReason::Length ? finished_length_ : why == FinishReason::Stop ? finished_stop_ : finished_abort_)++;
}

void ServerMetrics::on_rejected() {
  std::lock_guard<std::mutex> lock(mu_);
  ++rejected_;
}

int ServerMetrics::blocks_used() const {
  std::lock_guard<std::mutex> lock(mu_);
  return blocks_used_;
}

std::string ServerMetrics::prometheus_text() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::ostringstream o;
  std::string label = "model_name=\"";
  for (char c : model_) label += (c == '"' || c == '\\') ? '_' : c;
  label += "\"";
  auto num = [](double v) {
    char b[64];
    std::snprintf(b, sizeof b, "%.9g", v);
    return std::string(b);
  };
  auto metric = [&](const char* name, const char* type, const char* help, double v, const std::string& extra = {}) {
    o << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
    o << name << "{" << label << extra << "} " << num(v) << "\n";
  };
  auto histogram = [&](const char* name, const char* help, const Histogram& h) {
    o << "# HELP " << name << " " << help << "\n# TYPE " << name << " histogram\n";
    uint64_t cum = 0;
    for (size_t i = 0; i < h.bounds.size(); ++i) {
      cum += h.counts[i];
      o << name << "_bucket{" << label << ",le=\"" << num(h.bounds[i]) << "\"} " << cum << "\n";
    }
    o << name << "_bucket{" << label << ",le=\"+Inf\"} " << h.count << "\n";
    o << name << "_sum{" << label << "} " << num(h.sum) << "\n";
    o << name << "_count{" << label << "} " << h.count << "\n";
  };
  const double usage = blocks_total_ ? double(blocks_used_) / double(blocks_total_) : 0.0;
  metric("vllm:num_requests_running", "gauge", "Sequences in the engine's running batch.", running_);
  metric("vllm:num_requests_waiting", "gauge", "Sequences waiting for the engine, and HTTP requests not yet in it.",
         double(waiting_) + double(queued_));
  metric("vllm:gpu_cache_usage_perc", "gauge", "KV cache usage: fraction of blocks held by live sequences (1 = full).",
         usage);
  metric("vllm:kv_cache_usage_perc", "gauge", "KV cache usage: fraction of blocks held by live sequences (1 = full).",
         usage);
  metric("llmwb:kv_blocks_in_use", "gauge", "KV blocks held by live sequences.", blocks_used_);
  metric("llmwb:kv_blocks_total", "gauge", "KV blocks in the pool.", blocks_total_);
  metric("llmwb:kv_blocks_cached", "gauge", "Free KV blocks kept for the prefix cache.", blocks_cached_);
  metric("vllm:prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache.",
         double(prefix_queries_));
  metric("vllm:prefix_cache_hits_total", "counter", "Prompt tokens found in the prefix cache.", double(prefix_hits_));
  metric("vllm:gpu_prefix_cache_hit_rate", "gauge", "Prefix cache hits / queries, in tokens, since start.",
         prefix_queries_ ? double(prefix_hits_) / double(prefix_queries_) : 0.0);
  metric("vllm:num_preemptions_total", "counter", "Sequences preempted for lack of KV blocks.", double(preemptions_));
  metric("vllm:prompt_tokens_total", "counter", "Prompt tokens of finished HTTP requests.", double(prompt_tokens_));
  metric("vllm:generation_tokens_total", "counter", "Generated tokens of finished HTTP requests.",
         double(generation_tokens_));
  o << "# HELP vllm:request_success_total Finished HTTP requests by finish reason.\n"
       "# TYPE vllm:request_success_total counter\n";
  o << "vllm:request_success_total{" << label << ",finished_reason=\"stop\"} " << finished_stop_ << "\n";
  o << "vllm:request_success_total{" << label << ",finished_reason=\"length\"} " << finished_length_ << "\n";
  o << "vllm:request_success_total{" << label << ",finished_reason=\"abort\"} " << finished_abort_ << "\n";
  metric("llmwb:requests_rejected_total", "counter", "HTTP requests refused with 429 (queue full).", double(rejected_));
  histogram("vllm:time_to_first_token_seconds", "Time from the HTTP request's arrival to its first token.", ttft_);
  histogram("vllm:time_per_output_token_seconds", "Time between two consecutive tokens of a request.", tpot_);
  return o.str();
}

}  // namespace llmwb::server
