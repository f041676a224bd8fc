#include "llmwb/quant_report.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "llmwb/errors.h"
#include "format/model_file.h"
#include "quant/model_comparison.h"
#include "quant/quant_scheme.h"
#include "quant/tensor_error.h"
#include "quant/weight_quantizer.h"
#include "tokenizer/tokenizer.h"

namespace llmwb {

namespace {

uint64_t total_bytes(const ModelFile& f) {
  uint64_t b = 0;
  for (const TensorView& t : f.tensors) b += t.row_bytes() * static_cast<uint64_t>(t.rows());
  return b;
}

// Where each phase's work lies on the 0..1 progress scale (rough shares of the run time).
constexpr double kLoaded = 0.10, kTensors = 0.30, kText = 0.75, kLayers = 0.80;

// JSON has no infinity: an exact tensor's SNR is null.
nlohmann::ordered_json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::ordered_json(v) : nullptr; }

}  // namespace


const std::string& builtin_quant_eval_text() {
  static const std::string text =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. "
      "One day, she saw a big, red ball under a tree. She ran to get it, but a dog was faster. "
      "The dog took the ball and ran away. Lily was sad, but then the dog came back and gave her the ball. "
      "They played together all day, and Lily was very happy.";
  return text;
}

QuantReport make_quant_report(const QuantReportOptions& o) {
  // Every progress call is also where a cancel is honoured.
  auto report = [&](double fraction, const std::string& what) {
    if (o.progress && !o.progress(fraction, what)) throw Error("quant-report", "cancelled");
  };
  report(0.0, "loading");
  auto ref_file = load_model_file(o.model_path);
  auto q_file = load_model_file(o.model_path);
  LlamaWeights ref_w = LlamaWeights::bind(*ref_file);
  LlamaWeights q_w = LlamaWeights::bind(*q_file);
  report(kLoaded / 2, "quantizing");
  if (!o.scheme.empty()) quantize_weights_in_place(*q_file, q_w, o.scheme);
  report(kLoaded, "measuring tensors");

  QuantReport r;
  r.model = o.model_path;
  r.scheme = o.scheme;
  r.text_name = o.text_name;
  r.n_layers = ref_file->config.n_layers;
  r.weight_bytes_before = total_bytes(*ref_file);
  r.weight_bytes_after = total_bytes(*q_file);
  for (size_t i = 0; o.tensor_errors && i < q_file->tensors.size(); ++i) {
    const TensorView& q = q_file->tensors[i];
    const TensorView& ref = ref_file->get(q.name);
    if (q.dtype != ref.dtype) r.tensors.push_back(measure_tensor_error(ref, q));
    report(kLoaded + (kTensors - kLoaded) * static_cast<double>(i + 1) / static_cast<double>(q_file->tensors.size()),
           "measuring tensors");
  }

  auto tok = load_tokenizer_for(*ref_file, o.tokenizer_path);
  std::vector<int> ids = tok->encode(o.text);
  if (o.max_text_tokens > 0 && static_cast<int>(ids.size()) > o.max_text_tokens) ids.resize(static_cast<size_t>(o.max_text_tokens));
  if (ids.empty()) throw Error(o.text_name.empty() ? "text" : o.text_name, "the evaluation text encodes to no tokens");

  ModelComparison cmp(ref_file->config, std::move(ref_w), std::move(q_w), o.threads);
  report(kTensors, "perplexity and KL");
  r.text = cmp.score_text(ids, o.window, [&](double f) { report(kTensors + (kText - kTensors) * f, "perplexity and KL"); });
  std::vector<int> calib{ref_file->config.bos_id};
  calib.insert(calib.end(), ids.begin(), ids.begin() + std::min<std::ptrdiff_t>(o.calib_tokens, static_cast<std::ptrdiff_t>(ids.size())));
  report(kText, "layer errors");
  r.outputs = cmp.output_errors(calib);
  report(kLayers, "greedy agreement");
  r.greedy = cmp.greedy({ref_file->config.bos_id}, o.greedy_tokens,
                        [&](double f) { report(kLayers + (1.0 - kLayers) * f, "greedy agreement"); });
  report(1.0, "done");
  return r;
}

std::string quant_report_json(const QuantReport& r, int indent) {
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (const TensorError& t : r.tensors) {
    tensors.push_back({{"name", t.name},
                       {"from", t.from},
                       {"to", t.to},
                       {"numel", t.numel},
                       {"bytes_from", t.bytes_from},
                       {"bytes_to", t.bytes_to},
                       {"mse", t.mse},
                       {"snr_db", finite_or_null(t.snr_db)},
                       {"max_abs_err", t.max_abs},
                       {"histogram", {{"lo", -t.max_abs}, {"hi", t.max_abs}, {"counts", t.histogram}}}});
  }
  nlohmann::ordered_json layers = nlohmann::ordered_json::array(), matmuls = nlohmann::ordered_json::array();
  for (const OutputError& o : r.outputs) {
    (o.label.rfind("layer ", 0) == 0 ? layers : matmuls).push_back({{"name", o.label}, {"rel_err", o.rel_err}});
  }
  const nlohmann::ordered_json j = {
      {"model", r.model},
      {"scheme", r.scheme},
      {"weight_bytes_before", r.weight_bytes_before},
      {"weight_bytes_after", r.weight_bytes_after},
      {"tensors", tensors},
      {"layer_output_rel_err", layers},
      {"matmul_output_rel_err", matmuls},
      {"text",
       {{"source", r.text_name},
        {"tokens_scored", r.text.n_scored},
        {"windows", r.text.n_windows},
        {"ppl_ref", r.text.ppl_ref},
        {"ppl_quant", r.text.ppl_quant},
        {"ppl_change", r.text.ppl_quant / r.text.ppl_ref - 1.0},
        {"kl_mean", r.text.kl_mean},
        {"kl_max", r.text.kl_max},
        {"top1_agreement", r.text.top1_agreement}}},
      {"greedy",
       {{"tokens", r.greedy.n_tokens},
        {"same", r.greedy.n_same},
        {"first_divergence", r.greedy.first_divergence},
        {"ref", r.greedy.ref},
        {"quant", r.greedy.quant}}}};
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);   // texts are model output
}

}  // namespace llmwb
