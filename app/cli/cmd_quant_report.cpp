// llmwb-cli quant-report — what a quantization scheme costs one model in accuracy: per tensor
// MSE / SNR / max error / error histogram, per layer relative error on a calibration prompt,
// perplexity, KL divergence against the stored weights and greedy agreement.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "args.h"
#include "command.h"
#include "llmwb/errors.h"
#include "llmwb/quant_report.h"

namespace llmwb::cli {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path, "cannot open the text file");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void print_text(const QuantReport& r) {
  std::printf("model %s, scheme %s: weights %.3f MB -> %.3f MB (%.1f%%)\n\n", r.model.c_str(), r.scheme.c_str(),
              static_cast<double>(r.weight_bytes_before) / 1e6, static_cast<double>(r.weight_bytes_after) / 1e6,
              100.0 * static_cast<double>(r.weight_bytes_after) / static_cast<double>(r.weight_bytes_before));
  std::printf("%-28s %-5s %-13s %12s %9s %12s  error histogram\n", "tensor", "from", "to", "MSE", "SNR dB", "max |err|");
  for (const TensorError& t : r.tensors) {
    // The histogram as a bar of digits 0-9 (share of the fullest bin), one per bin.
    uint64_t peak = 1;
    for (uint64_t c : t.histogram) peak = std::max(peak, c);
    std::string bar;
    for (uint64_t c : t.histogram) bar += static_cast<char>('0' + (c * 9 + peak - 1) / peak);
    std::printf("%-28s %-5s %-13s %12.4g %9.2f %12.4g  [%s]\n", t.name.c_str(), t.from.c_str(), t.to.c_str(), t.mse,
                t.snr_db, t.max_abs, bar.c_str());
  }
  std::printf("\nrelative error of layer outputs (residual stream) on the calibration prompt:\n");
  for (const OutputError& o : r.outputs)
    if (o.label.rfind("layer ", 0) == 0) std::printf("  %-10s %.5f\n", o.label.c_str(), o.rel_err);
  std::printf("\nrelative error of matmul outputs:\n");
  for (const OutputError& o : r.outputs)
    if (o.label.rfind("layer ", 0) != 0) std::printf("  %-28s %.5f\n", o.label.c_str(), o.rel_err);
  const TextScore& s = r.text;
  std::printf("\ntext %s: %d tokens in %d windows\n", r.text_name.c_str(), s.n_scored, s.n_windows);
  std::printf("  perplexity   %.4f (stored) -> %.4f (%s), %+.3f%%\n", s.ppl_ref, s.ppl_quant, r.scheme.c_str(),
              100.0 * (s.ppl_quant / s.ppl_ref - 1.0));
  std::printf("  KL(stored || quantized) per token: mean %.6f, max %.6f nats\n", s.kl_mean, s.kl_max);
  std::printf("  top-1 agreement %.2f%%\n", 100.0 * s.top1_agreement);
  std::printf("greedy from BOS: %d / %d tokens the same, first divergence %s\n", r.greedy.n_same, r.greedy.n_tokens,
              r.greedy.first_divergence < 0 ? "none" : std::to_string(r.greedy.first_divergence).c_str());
}

int run_quant_report(const std::vector<std::string>& argv) {
  Args a(argv, {"model", "tokenizer", "type", "text", "threads", "window", "max-tokens", "calib-tokens", "greedy-tokens"},
         {"json"});
  if (!a.has("model")) throw UsageError("--model is required");
  if (!a.has("type")) throw UsageError("--type is required");
  QuantReportOptions o;
  o.model_path = a.str("model");
  o.tokenizer_path = a.str("tokenizer");
  o.scheme = a.str("type");
  o.threads = static_cast<int>(a.integer("threads", 2, 1, 256));
  o.window = static_cast<int>(a.integer("window", 0, 0, 1 << 20));
  o.max_text_tokens = static_cast<int>(a.integer("max-tokens", 0, 0));
  o.calib_tokens = static_cast<int>(a.integer("calib-tokens", 64, 1, 1 << 20));
  o.greedy_tokens = static_cast<int>(a.integer("greedy-tokens", 64, 0, 1 << 20));
  if (a.has("text")) {
    o.text_name = a.str("text");
    o.text = read_text(o.text_name);
  } else {
    // Without --text: a short story in the style most small Llama test models were trained on.
    o.text_name = "(built-in sample)";
    o.text = builtin_quant_eval_text();
  }
  const QuantReport r = make_quant_report(o);
  if (a.flag("json")) {
    std::cout << quant_report_json(r) << "\n";
  } else {
    print_text(r);
  }
  return 0;
}

const char* const kUsage =
    "--model M --type T [flags]\n"
    "  --model M            the model (GGUF file, Hugging Face folder or llama2.c checkpoint)\n"
    "  --tokenizer T        tokenizer .model / llama2.c .bin (default: the model's own)\n"
    "  --type T             int8 | int8-asym | int4-g32 | int4-g128 | q8_0 | q4_0 |\n"
    "                       q4_k | q5_k | q6_k | q4_k_m\n"
    "  --text FILE          evaluation text for perplexity / KL / top-1 agreement (default: a built-in story)\n"
    "  --window N           perplexity window in positions (default: the model's context)\n"
    "  --max-tokens N       score at most N tokens of the text\n"
    "  --calib-tokens N     tokens of the text for the layer errors (default 64)\n"
    "  --greedy-tokens N    greedy tokens from BOS to compare (default 64)\n"
    "  --threads N          CPU threads (default 2)\n"
    "  --json               one JSON object instead of tables\n";

CommandRegistration reg({"quant-report", "measure what a quantization scheme costs in accuracy", kUsage,
                         run_quant_report});

}  // namespace
}  // namespace llmwb::cli
