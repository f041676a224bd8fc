// llmwb-cli quantize — quantize a model ahead of time and write it as GGUF (llama.cpp's type
// ids and block layouts for Q8_0 / Q4_0 / Q4_1 and the k-quants; llmwb's own types are in docs/QUANTIZATION.md).
#include <cstdio>

#include "args.h"
#include "command.h"
#include "llmwb/errors.h"
#include "model/llama_weights.h"
#include "format/model_file.h"
#include "output_path.h"
#include "format/model_file.h"
#include "quant/gguf_model_writer.h"
#include "quant/weight_quantizer.h"
#include "remove_on_interrupt.h"

namespace llmwb::cli {
namespace {

int run_quantize(const std::vector<std::string>& argv) {
  Args a(argv, {"model", "out", "type"}, {"quiet", "force"});
  if (!a.has("model")) throw UsageError("--model is required");
  if (!a.has("out")) throw UsageError("--out is required");
  if (!a.has("type")) throw UsageError("--type is required");
  const std::string scheme = a.str("type");
  QuantScheme::parse(scheme);   // rejects an unknown type before the model is read
  const std::string out = a.str("out");
  prepare_output_file("out", out, {a.str("model")}, a.flag("force"));
  auto file = load_model_file(a.str("model"));
  LlamaWeights w = LlamaWeights::bind(*file);
  uint64_t before = 0, after = 0;
  for (const TensorView& t : file->tensors) before += t.row_bytes() * static_cast<uint64_t>(t.rows());
  const std::vector<QuantizedTensor> done = quantize_weights_in_place(*file, w, scheme);
  for (const TensorView& t : file->tensors) after += t.row_bytes() * static_cast<uint64_t>(t.rows());
  {
    // The model is written to OUT.partial and renamed; Ctrl-C (or a kill) meanwhile removes it.
    RemoveOnInterrupt guard(out + ".partial");
    write_model_gguf(*file, out, scheme);
  }
  if (!a.flag("quiet")) {
    int fallbacks = 0;
    for (const TensorView& t : file->tensors) {
      std::string note;
      for (const QuantizedTensor& q : done) {
        if (q.name != t.name || q.wanted == q.to) continue;
        ++fallbacks;
        note = std::string("(fallback: ") + std::to_string(t.cols()) + " columns do not fit " + dtype_name(q.wanted) +
               (q.to == q.from ? "; kept as stored)" : ")");
      }
      std::printf("%-32s %-14s %s\n", t.name.c_str(), dtype_name(t.dtype), note.c_str());
    }
    if (fallbacks) std::printf("%d tensors fell back to another type (rows not whole blocks)\n", fallbacks);
    std::printf("%s: %.2f MB -> %.2f MB (%s)%s\n", a.str("out").c_str(), static_cast<double>(before) / 1e6,
                static_cast<double>(after) / 1e6, scheme.c_str(),
                file->tokenizer.pieces.empty() ? "; no vocabulary in the source: pass --tokenizer when using it" : "");
  }
  return 0;
}

const char* const kUsage =
    "--model IN --out OUT.gguf --type TYPE [--force] [--quiet]\n"
    "  --model IN      a GGUF file, Hugging Face folder or llama2.c checkpoint\n"
    "  --out OUT.gguf  the quantized model (written as OUT.gguf.partial, then renamed; a missing folder\n"
    "                  is created; never a device, FIFO or folder, and never the input unless --force)\n"
    "  --force         allow --out to be the input model itself (it is replaced by the quantized copy)\n"
    "  --type TYPE     q8_0 | q4_0 (GGUF types; tensors whose rows they cannot hold stay as stored),\n"
    "                  q4_k | q5_k | q6_k | q4_k_m (GGUF k-quants, Q6_K head; rows not a multiple\n"
    "                  of 256 fall back to Q8_0, else stay as stored; q4_k_m: llama.cpp's Q4_K_M mix)\n"
    "                  int8 | int8-asym (per output channel), int4-g32 (GGUF Q4_1) | int4-g128\n"
    "  --quiet         print nothing\n";

CommandRegistration reg({"quantize", "quantize a model's matrices and write GGUF", kUsage, run_quantize});

}  // namespace
}  // namespace llmwb::cli
