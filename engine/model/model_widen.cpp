#include "model/model_widen.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "llmwb/errors.h"

namespace llmwb {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// How a source tensor becomes its wide version.
struct Rule {
  bool rows = false;     // rows replicated f times (the tensor's output width grows)
  bool cols = false;     // columns replicated f times (its input width grows)
  bool divide = false;   // values divided by f (it sums over a replicated input)
};

// Throws for a tensor no rule covers: widening it blindly could change the function.
Rule rule_for(const std::string& path, const TensorView& t) {
  const std::string& n = t.name;
  if (n == "token_embd.weight") return {false, true, false};
  if (n == "output.weight") return {false, true, true};
  if (n == "rope_freqs.weight" || ends_with(n, ".attn_q_norm.weight") || ends_with(n, ".attn_k_norm.weight"))
    return {};
  if (n == "output_norm.weight" || ends_with(n, ".attn_norm.weight") || ends_with(n, ".ffn_norm.weight") ||
      ends_with(n, ".attn_q.bias") || ends_with(n, ".attn_k.bias") || ends_with(n, ".attn_v.bias"))
    return {true, false, false};
  for (const char* m : {".attn_q.weight", ".attn_k.weight", ".attn_v.weight", ".attn_output.weight",
                        ".ffn_gate.weight", ".ffn_up.weight", ".ffn_down.weight"})
    if (ends_with(n, m)) return {true, true, true};
  throw Error(path, "tensor '" + n + "': no rule widens it (make-model --widen knows Llama / Qwen2 / Qwen3 tensors)");
}

void encode_row(DType dt, const float* src, int64_t n, uint8_t* dst) {
  switch (dt) {
    case DType::F32: std::memcpy(dst, src, sizeof(float) * size_t(n)); return;
    case DType::F16: {
      auto* d = reinterpret_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = fp32_to_fp16(src[i]);
      return;
    }
    case DType::BF16: {
      auto* d = reinterpret_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = fp32_to_bf16(src[i]);
      return;
    }
    default: throw Error("dtype", std::string("widened weights are f32, f16 or bf16, not ") + dtype_name(dt));
  }
}

}  // namespace

std::unique_ptr<ModelFile> widen_model(const ModelFile& src, const WidenOptions& opt) {
  if (opt.factor < 1 || opt.factor > 256) throw Error("widen", "must be in [1, 256], got " + std::to_string(opt.factor));
  if (!(opt.noise >= 0.0f) || opt.noise > 1.0f)
    throw Error("noise", "must be in [0, 1] (relative to each tensor's RMS), got " + std::to_string(opt.noise));
  if (opt.dtype != DType::F32 && opt.dtype != DType::F16 && opt.dtype != DType::BF16)
    throw Error("dtype", std::string("widened weights are f32, f16 or bf16, not ") + dtype_name(opt.dtype));
  const int f = opt.factor;
  const ModelConfig& c = src.config;
  auto out = std::make_unique<ModelFile>();
  out->path = src.path;
  out->format = "gguf";
  out->tokenizer = src.tokenizer;
  out->metadata = src.metadata;
  ModelConfig& w = out->config;
  w = c;
  w.dim = c.dim * f;
  w.hidden_dim = c.hidden_dim * f;
  w.n_heads = c.n_heads * f;
  w.n_kv_heads = c.n_kv_heads * f;
  w.head_dim = c.head_dim;
  w.tied_embeddings = false;
  w.name = (c.name.empty() ? c.architecture : c.name) + "-widened-x" + std::to_string(f);
  w.validate(src.path);

  // A tied head is written out as its own tensor (the wide head divides by f, the embedding does not).
  std::vector<TensorView> inputs = src.tensors;
  if (c.tied_embeddings && !src.find("output.weight")) {
    TensorView head = src.get("token_embd.weight");
    head.name = "output.weight";
    inputs.push_back(head);
  }
  const float inv = 1.0f / float(f);
  for (const TensorView& t : inputs) {
    const Rule r = rule_for(src.path, t);
    const bool matrix = t.shape.size() == 2;
    const int64_t rows = t.rows(), cols = t.cols();
    if (!matrix && (r.cols || t.shape.size() != 1))
      throw Error(src.path, "tensor '" + t.name + "': expected a matrix");
    const DType dt = matrix ? opt.dtype : DType::F32;
    const int64_t wrows = r.rows && matrix ? rows * f : rows;
    const int64_t wcols = r.cols ? cols * f : (!matrix && r.rows ? cols * f : cols);
    TensorView v = t;
    v.dtype = dt;
    v.shape = matrix ? std::vector<int64_t>{wrows, wcols} : std::vector<int64_t>{wcols};
    v.nbytes = dtype_row_bytes(dt, wcols) * uint64_t(wrows);
    std::vector<uint8_t>& buf = out->owned.emplace_back(v.nbytes);
    v.data = buf.data();

    // The source, decoded once; its RMS scales the noise.
    std::vector<float> s(static_cast<size_t>(rows * cols));
    for (int64_t i = 0; i < rows; ++i) dequantize_row(t.dtype, t.row(i), s.data() + i * cols, cols);
    double ss = 0;
    for (float x : s) ss += double(x) * x;
    const float sigma = opt.noise * float(std::sqrt(ss / double(std::max<size_t>(1, s.size()))));
    std::mt19937_64 rng(opt.seed ^ std::hash<std::string>{}(t.name));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const bool noisy = sigma > 0 && matrix;

    std::vector<float> row(static_cast<size_t>(wcols));
    const uint64_t rb = dtype_row_bytes(dt, wcols);
    for (int64_t wr = 0; wr < wrows; ++wr) {
      const float* from = s.data() + (wr % rows) * cols;
      const int copies = int(wcols / cols);
      for (int k = 0; k < copies; ++k)
        for (int64_t i = 0; i < cols; ++i) row[size_t(k * cols + i)] = r.divide ? from[i] * inv : from[i];
      if (noisy)
        for (float& x : row) x += sigma * (r.divide ? inv : 1.0f) * normal(rng);
      encode_row(dt, row.data(), wcols, buf.data() + uint64_t(wr) * rb);
    }
    out->tensors.push_back(std::move(v));
  }
  return out;
}

}  // namespace llmwb
