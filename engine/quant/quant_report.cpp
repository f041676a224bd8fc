#include "quant/quant_report.h"

#include "llmwb/errors.h"
#include "model/model_file.h"
#include "quant/weight_quantizer.h"
#include "tokenizer/tokenizer.h"

namespace llmwb {

namespace {

uint64_t total_bytes(const ModelFile& f) {
  uint64_t b = 0;
  for (const TensorView& t : f.tensors) b += t.row_bytes() * static_cast<uint64_t>(t.rows());
  return b;
}

}  // namespace

QuantReport make_quant_report(const QuantReportOptions& o) {
  auto ref_file = load_model_file(o.model_path);
  auto q_file = load_model_file(o.model_path);
  LlamaWeights ref_w = LlamaWeights::bind(*ref_file);
  LlamaWeights q_w = LlamaWeights::bind(*q_file);
  quantize_weights_in_place(*q_file, q_w, o.scheme);

  QuantReport r;
  r.model = o.model_path;
  r.scheme = o.scheme;
  r.text_name = o.text_name;
  r.weight_bytes_before = total_bytes(*ref_file);
  r.weight_bytes_after = total_bytes(*q_file);
  for (size_t i = 0; i < q_file->tensors.size(); ++i) {
    const TensorView& q = q_file->tensors[i];
    const TensorView& ref = ref_file->get(q.name);
    if (q.dtype != ref.dtype) r.tensors.push_back(measure_tensor_error(ref, q));
  }

  auto tok = load_tokenizer_for(*ref_file, o.tokenizer_path);
  std::vector<int> ids = tok->encode(o.text);
  if (o.max_text_tokens > 0 && static_cast<int>(ids.size()) > o.max_text_tokens) ids.resize(static_cast<size_t>(o.max_text_tokens));
  if (ids.empty()) throw Error(o.text_name.empty() ? "text" : o.text_name, "the evaluation text encodes to no tokens");

  ModelComparison cmp(ref_file->config, std::move(ref_w), std::move(q_w), o.threads);
  r.text = cmp.score_text(ids, o.window);
  std::vector<int> calib{ref_file->config.bos_id};
  calib.insert(calib.end(), ids.begin(), ids.begin() + std::min<std::ptrdiff_t>(o.calib_tokens, static_cast<std::ptrdiff_t>(ids.size())));
  r.outputs = cmp.output_errors(calib);
  r.greedy = cmp.greedy({ref_file->config.bos_id}, o.greedy_tokens);
  return r;
}

}  // namespace llmwb
