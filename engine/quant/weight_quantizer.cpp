#include "quant/weight_quantizer.h"

#include <algorithm>
#include <thread>

#include "llmwb/errors.h"
#include "memory/mapped_file.h"

namespace llmwb {

namespace {

// The checked size of src's rows re-encoded as dtype.
uint64_t quantized_bytes(const TensorView& src, DType dtype) {
  if (!dtype_can_quantize(dtype)) throw Error(src.name, std::string("cannot quantize to ") + dtype_name(dtype));
  if (!dtype_row_fits(dtype, src.cols())) {
    throw Error(src.name, std::to_string(src.cols()) + " columns do not fit " + dtype_name(dtype) + " rows");
  }
  return dtype_row_bytes(dtype, src.cols()) * static_cast<uint64_t>(src.rows());
}

// Re-encodes src's rows into out (quantized_bytes long).
TensorView quantize_into(const TensorView& src, DType dtype, uint8_t* out, uint64_t nbytes, int n_threads) {
  const int64_t rows = src.rows(), cols = src.cols();
  const uint64_t row_bytes = dtype_row_bytes(dtype, cols);
  auto work = [&](int64_t r0, int64_t r1) {
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = r0; r < r1; ++r) {
      dequantize_row(src.dtype, src.row(r), row.data(), cols);
      quantize_row(dtype, row.data(), out + static_cast<uint64_t>(r) * row_bytes, cols);
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
  v.data = out;
  v.nbytes = nbytes;
  return v;
}

}  // namespace

TensorView quantize_tensor(const TensorView& src, DType dtype, std::vector<uint8_t>& out, int n_threads) {
  const uint64_t n = quantized_bytes(src, dtype);
  out.assign(static_cast<size_t>(n), 0);
  return quantize_into(src, dtype, out.data(), n, n_threads);
}

TensorView quantize_tensor(const TensorView& src, DType dtype, PageBuffer& out, int n_threads) {
  const uint64_t n = quantized_bytes(src, dtype);
  out = PageBuffer(n);   // zero-filled
  return quantize_into(src, dtype, out.data(), n, n_threads);
}

std::vector<QuantizedTensor> quantize_weights_in_place(ModelFile& file, LlamaWeights& w, const std::string& scheme_name,
                                                       const std::string& backend) {
  const QuantScheme scheme = QuantScheme::parse(scheme_name).for_backend(backend);
  const int n_threads = static_cast<int>(std::max(1u, std::min(8u, std::thread::hardware_concurrency())));
  const int n_layers = static_cast<int>(w.layers.size());
  std::vector<QuantizedTensor> done;
  auto requantize = [&](TensorView& t, const TensorRole& role) {
    const QuantChoice c = scheme.choose(t, role);
    done.push_back({t.name, t.dtype, c.dtype, c.wanted});
    if (c.dtype == t.dtype) return;
    file.quantized.emplace_back();
    const TensorView original = t;
    t = quantize_tensor(t, c.dtype, file.quantized.back(), n_threads);
    // Nothing reads the original any more (views are repointed below): hand its mapped pages
    // back, so RSS holds the quantized copy rather than both.
    release_mapped_pages(original.data, original.nbytes);
    for (TensorView& ft : file.tensors)
      if (ft.name == t.name) ft = t;
  };
  // A tied head is the embedding table: it takes the head's type when the scheme quantizes
  // embeddings at all.
  const bool tied = w.output.data == w.tok_embeddings.data;
  TensorRole emb;
  emb.is_embedding = true;
  emb.is_output_head = tied;
  requantize(w.tok_embeddings, emb);
  if (tied) w.output = w.tok_embeddings;
  for (int l = 0; l < n_layers; ++l) {
    LlamaLayerWeights& L = w.layers[static_cast<size_t>(l)];
    TensorRole role;
    role.layer = l;
    role.n_layers = n_layers;
    for (TensorView* t : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w1, &L.w2, &L.w3}) requantize(*t, role);
  }
  if (!tied) {
    TensorRole head;
    head.is_output_head = true;
    requantize(w.output, head);
  }
  return done;
}

}  // namespace llmwb
