// recording_backend.h — a Backend that forwards every call to another and keeps copies of
// chosen intermediate values, so that two runs of the same model (F32 and quantized) can be
// compared layer by layer without changing the forward pass.
//
// What it records, and why it can find it without knowing the forward pass's code:
//  - every matmul output, under the weight's name (blk.3.ffn_down.weight);
//  - the input of every rmsnorm whose weight vector was registered with watch_norm(): the
//    residual stream entering layer l + 1 (its attn_norm) is the output of layer l, and the
//    stream entering the final norm is the output of the last layer.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace llmwb {

class RecordingBackend final : public Backend {
 public:
  explicit RecordingBackend(Backend& inner) : inner_(inner) {}

  // Records the input of rmsnorm calls with weight vector `w` under `label`.
  void watch_norm(const float* w, const std::string& label) { norms_[w] = label; }
  void set_recording(bool on) { recording_ = on; }
  void clear() { values_.clear(); }
  // label -> the values of the last call that recorded it.
  const std::map<std::string, std::vector<float>>& values() const { return values_; }

  std::string name() const override { return inner_.name(); }
  int num_threads() const override { return inner_.num_threads(); }
  void embed(const TensorView& table, const int* tokens, int n_rows, float* out) override {
    inner_.embed(table, tokens, n_rows, out);
  }
  void rmsnorm(const float* x, const float* w, int n_rows, int dim, float eps, float* out) override;
  void matmul(const TensorView& W, const float* x, int n_rows, float* y) override;
  void rope(float* x, int n_rows, int n_heads, const int* positions, const RopeParams& rp) override {
    inner_.rope(x, n_rows, n_heads, positions, rp);
  }
  void store_kv(KVCache& cache, int layer, const ForwardBatch& batch, const float* k, const float* v) override {
    inner_.store_kv(cache, layer, batch, k, v);
  }
  void attention(const KVCache& cache, int layer, const ForwardBatch& batch, const float* q,
                 const AttentionParams& p, float* out, AttentionRecord* record) override {
    inner_.attention(cache, layer, batch, q, p, out, record);
  }
  void silu_mul(float* gate, const float* up, int64_t n) override { inner_.silu_mul(gate, up, n); }
  void add(float* y, const float* x, int64_t n) override { inner_.add(y, x, n); }
  void add_bias(float* y, const float* b, int n_rows, int width) override { inner_.add_bias(y, b, n_rows, width); }

 private:
  Backend& inner_;
  bool recording_ = false;
  std::map<const float*, std::string> norms_;
  std::map<std::string, std::vector<float>> values_;
};

}  // namespace llmwb
