#include "reference_forward.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace llmwb::test {

std::vector<double> ReferenceLlama::mat(const std::string& name) const {
  const TensorView& t = f_.get(name);
  std::vector<float> row(static_cast<size_t>(t.cols()));
  std::vector<double> out;
  out.reserve(static_cast<size_t>(t.numel()));
  for (int64_t r = 0; r < t.rows(); ++r) {
    dequantize_row(t.dtype, t.row(r), row.data(), t.cols());
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

ReferenceLlama::ReferenceLlama(const ModelFile& file) : c_(file.config), f_(file) {
  emb_ = mat("token_embd.weight");
  final_norm_ = mat("output_norm.weight");
  out_ = f_.find("output.weight") ? mat("output.weight") : emb_;
  for (int l = 0; l < c_.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    Layer L;
    L.attn_norm = mat(p + "attn_norm.weight");
    L.wq = mat(p + "attn_q.weight");
    L.wk = mat(p + "attn_k.weight");
    L.wv = mat(p + "attn_v.weight");
    L.wo = mat(p + "attn_output.weight");
    if (c_.attn_qkv_bias) {
      L.bq = mat(p + "attn_q.bias");
      L.bk = mat(p + "attn_k.bias");
      L.bv = mat(p + "attn_v.bias");
    }
    if (c_.attn_qk_norm) {
      L.q_norm = mat(p + "attn_q_norm.weight");
      L.k_norm = mat(p + "attn_k_norm.weight");
    }
    L.ffn_norm = mat(p + "ffn_norm.weight");
    L.w1 = mat(p + "ffn_gate.weight");
    L.w2 = mat(p + "ffn_down.weight");
    L.w3 = mat(p + "ffn_up.weight");
    layers_.push_back(std::move(L));
  }
  // theta^(-2i/d), then Llama 3.1's scaling (transformers' _compute_llama3_parameters):
  // wavelengths above original_max_position / low_freq_factor slowed by `factor`, those below
  // original_max_position / high_freq_factor kept, a linear blend of the two in between.
  const int hd = c_.head_dim;
  const RopeScaling& s = c_.rope_scaling;
  for (int i = 0; i < hd / 2; ++i) {
    double f = std::pow(static_cast<double>(c_.rope_theta), -2.0 * i / hd);
    if (s.type == "linear") f /= s.factor;
    if (s.type == "llama3") {
      const double wavelen = 2 * M_PI / f, old = s.original_max_position;
      if (wavelen > old / s.low_freq_factor) {
        f /= s.factor;
      } else if (wavelen >= old / s.high_freq_factor) {
        const double smooth = (old / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        f = (1 - smooth) * f / s.factor + smooth * f;
      }
    }
    if (const TensorView* t = f_.find("rope_freqs.weight")) f /= reinterpret_cast<const float*>(t->data)[i];
    inv_freq_.push_back(f);
  }
}

namespace {
std::vector<double> matvec(const std::vector<double>& W, const std::vector<double>& x, int rows) {
  const size_t cols = x.size();
  std::vector<double> y(static_cast<size_t>(rows), 0.0);
  for (size_t r = 0; r < static_cast<size_t>(rows); ++r)
    for (size_t i = 0; i < cols; ++i) y[r] += W[r * cols + i] * x[i];
  return y;
}
std::vector<double> rmsnorm(const std::vector<double>& x, const std::vector<double>& w, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double inv = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + eps);
  std::vector<double> o(x.size());
  for (size_t i = 0; i < x.size(); ++i) o[i] = x[i] * inv * w[i];
  return o;
}
}  // namespace

std::vector<double> ReferenceLlama::step(int token) {
  const int dim = c_.dim, hd = c_.head_dim, nh = c_.n_heads, nkv = c_.n_kv_heads;
  std::vector<double> x(emb_.begin() + static_cast<long>(token) * dim, emb_.begin() + static_cast<long>(token + 1) * dim);
  auto rope = [&](std::vector<double>& v, int heads) {
    for (int h = 0; h < heads; ++h)
      for (int i = 0; i < hd / 2; ++i) {
        const double theta = pos_ * inv_freq_[static_cast<size_t>(i)];
        const double cs = std::cos(theta), sn = std::sin(theta);
        const int a = c_.rope_layout == RopeLayout::Interleaved ? 2 * i : i;
        const int b = c_.rope_layout == RopeLayout::Interleaved ? 2 * i + 1 : i + hd / 2;
        double& x0 = v[static_cast<size_t>(h * hd + a)];
        double& x1 = v[static_cast<size_t>(h * hd + b)];
        const double n0 = x0 * cs - x1 * sn, n1 = x0 * sn + x1 * cs;
        x0 = n0;
        x1 = n1;
      }
  };
  for (Layer& L : layers_) {
    std::vector<double> xb = rmsnorm(x, L.attn_norm, c_.norm_eps);
    std::vector<double> q = matvec(L.wq, xb, nh * hd), k = matvec(L.wk, xb, nkv * hd), v = matvec(L.wv, xb, nkv * hd);
    if (c_.attn_qkv_bias)
      for (auto [y, b] : {std::pair{&q, &L.bq}, {&k, &L.bk}, {&v, &L.bv}})
        for (size_t i = 0; i < y->size(); ++i) (*y)[i] += (*b)[i];
    if (c_.attn_qk_norm)
      for (auto [y, g, heads] : {std::tuple{&q, &L.q_norm, nh}, {&k, &L.k_norm, nkv}})
        for (int h = 0; h < heads; ++h) {
          const auto head = y->begin() + static_cast<long>(h) * hd;
          const std::vector<double> normed = rmsnorm(std::vector<double>(head, head + hd), *g, c_.norm_eps);
          std::copy(normed.begin(), normed.end(), head);
        }
    rope(q, nh);
    rope(k, nkv);
    L.k_cache.push_back(k);
    L.v_cache.push_back(v);
    std::vector<double> att(static_cast<size_t>(nh * hd), 0.0);
    for (int h = 0; h < nh; ++h) {
      const int kh = h / (nh / nkv);
      std::vector<double> s(static_cast<size_t>(pos_ + 1));
      double mx = -1e300;
      for (int j = 0; j <= pos_; ++j) {
        double d = 0;
        for (int e = 0; e < hd; ++e) d += q[static_cast<size_t>(h * hd + e)] * L.k_cache[static_cast<size_t>(j)][static_cast<size_t>(kh * hd + e)];
        s[static_cast<size_t>(j)] = d / std::sqrt(static_cast<double>(hd));
        mx = std::max(mx, s[static_cast<size_t>(j)]);
      }
      double sum = 0;
      for (double& e : s) sum += e = std::exp(e - mx);
      for (int j = 0; j <= pos_; ++j)
        for (int e = 0; e < hd; ++e)
          att[static_cast<size_t>(h * hd + e)] += s[static_cast<size_t>(j)] / sum * L.v_cache[static_cast<size_t>(j)][static_cast<size_t>(kh * hd + e)];
    }
    std::vector<double> o = matvec(L.wo, att, dim);
    for (int i = 0; i < dim; ++i) x[static_cast<size_t>(i)] += o[static_cast<size_t>(i)];
    xb = rmsnorm(x, L.ffn_norm, c_.norm_eps);
    std::vector<double> g = matvec(L.w1, xb, c_.hidden_dim), u = matvec(L.w3, xb, c_.hidden_dim);
    for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
    o = matvec(L.w2, g, dim);
    for (int i = 0; i < dim; ++i) x[static_cast<size_t>(i)] += o[static_cast<size_t>(i)];
  }
  ++pos_;
  return matvec(out_, rmsnorm(x, final_norm_, c_.norm_eps), c_.vocab_size);
}

}  // namespace llmwb::test
