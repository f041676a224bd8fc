#include "quant/weight_quantizer.h"

#include <algorithm>
#include <thread>

#include "llmwb/errors.h"

namespace llmwb {

TensorView quantize_tensor(const TensorView& src, DType dtype, std::vector<uint8_t>& out, int n_threads) {
  const int64_t rows = src.rows(), cols = src.cols();
  if (!dtype_can_quantize(dtype)) throw Error(src.name, std::string("cannot quantize to ") + dtype_name(dtype));
  if (!dtype_row_fits(dtype, cols)) {
    throw Error(src.name, std::to_string(cols) + " columns do not fit " + dtype_name(dtype) + " rows");
  }
  const uint64_t row_bytes = dtype_row_bytes(dtype, cols);
  out.assign(static_cast<size_t>(row_bytes * static_cast<uint64_t>(rows)), 0);
  auto work = [&](int64_t r0, int64_t r1) {
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = r0; r < r1; ++r) {
      dequantize_row(src.dtype, src.row(r), row.data(), cols);
      quantize_row(dtype, row.data(), out.data() + static_cast<uint64_t>(r) * row_bytes, cols);
    }
  };
  // Quantizing a 1B model row by row takes seconds; split the rows over a few threads.
  const int64_t n = std::clamp<int64_t>(std::min<int64_t>(n_threads, rows / 64), 1, 64);
  if (n == 1) {
    work(0, rows);
  } else {
    std::vector<std::thread> threads;
    for (int64_t i = 0; i < n; ++i) threads.emplace_back(work, rows * i / n, rows * (i + 1) / n);
    for (auto& t : threads) t.join();
  }
  TensorView v;
  v.name = src.name;
  v.dtype = dtype;
  v.shape = src.shape;
  v.data = out.data();
  v.nbytes = out.size();
  return v;
}

void quantize_weights_in_place(ModelFile& file, LlamaWeights& w, const std::string& scheme_name) {
  const QuantScheme scheme = QuantScheme::parse(scheme_name);
  const int n_threads = static_cast<int>(std::max(1u, std::min(8u, std::thread::hardware_concurrency())));
  auto requantize = [&](TensorView& t, bool is_head) {
    const DType dt = scheme.dtype_for(t, is_head);
    if (dt == t.dtype) return;
    file.owned.emplace_back();
    t = quantize_tensor(t, dt, file.owned.back(), n_threads);
    for (TensorView& ft : file.tensors)
      if (ft.name == t.name) ft = t;
  };
  for (LlamaLayerWeights& L : w.layers) {
    for (TensorView* t : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w1, &L.w2, &L.w3}) requantize(*t, false);
  }
  // A tied head is the embedding table, which stays (it is read a row at a time, not multiplied).
  if (w.output.data != w.tok_embeddings.data) requantize(w.output, true);
}

}  // namespace llmwb
