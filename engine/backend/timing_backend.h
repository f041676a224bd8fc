// timing_backend.h — a Backend that runs every operation on another backend and times it, per
// layer and operation: where one recorded step's time went (the token inspector). Each call is
// synchronous on the CPU backend, so its wall time is its cost there.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <utility>

#include "backend/backend.h"

namespace llmwb {

class TimingBackend final : public Backend {
 public:
  struct Total {
    double seconds = 0;
    int calls = 0;
  };
  explicit TimingBackend(Backend& inner) : inner_(inner) {}

  void set_layer(int layer) { layer_ = layer; }
  // (layer, op) -> time; layer -1 is outside the layers.
  const std::map<std::pair<int, std::string>, Total>& totals() const { return totals_; }

  std::string name() const override { return inner_.name(); }
  int num_threads() const override { return inner_.num_threads(); }
  void embed(const TensorView& table, const int* tokens, int n_rows, float* out) override {
    timed("embed", [&] { inner_.embed(table, tokens, n_rows, out); });
  }
  void rmsnorm(const float* x, const float* w, int n_rows, int dim, float eps, float* out) override {
    timed("rmsnorm", [&] { inner_.rmsnorm(x, w, n_rows, dim, eps, out); });
  }
  void matmul(const TensorView& W, const float* x, int n_rows, float* y) override {
    timed("matmul", [&] { inner_.matmul(W, x, n_rows, y); });
  }
  void matmul_shared_input(const float* x, int n_rows, std::span<const MatmulOut> outs) override {
    timed("matmul", [&] { inner_.matmul_shared_input(x, n_rows, outs); });
  }
  void rope(float* x, int n_rows, int n_heads, const int* positions, const RopeParams& rp) override {
    timed("rope", [&] { inner_.rope(x, n_rows, n_heads, positions, rp); });
  }
  void store_kv(KVCache& cache, int layer, const ForwardBatch& batch, const float* k, const float* v) override {
    timed("store_kv", [&] { inner_.store_kv(cache, layer, batch, k, v); });
  }
  void attention(const KVCache& cache, int layer, const ForwardBatch& batch, const float* q, const AttentionParams& p,
                 float* out, AttentionRecord* record) override {
    timed("attention", [&] { inner_.attention(cache, layer, batch, q, p, out, record); });
  }
  void silu_mul(float* gate, const float* up, int64_t n) override {
    timed("silu_mul", [&] { inner_.silu_mul(gate, up, n); });
  }
  void add(float* y, const float* x, int64_t n) override {
    timed("add", [&] { inner_.add(y, x, n); });
  }
  void add_bias(float* y, const float* b, int n_rows, int width) override {
    timed("add_bias", [&] { inner_.add_bias(y, b, n_rows, width); });
  }

 private:
  template <typename Fn>
  void timed(const char* op, Fn fn) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    Total& t = totals_[{layer_, op}];
    t.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++t.calls;
  }
  Backend& inner_;
  int layer_ = -1;
  std::map<std::pair<int, std::string>, Total> totals_;
};

}  // namespace llmwb
