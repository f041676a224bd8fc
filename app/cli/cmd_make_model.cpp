// llmwb-cli make-model — a random-weight Llama/Qwen at a real architecture's shape, as GGUF or as a
// Hugging Face safetensors folder, for benchmarks and tests that need big models offline.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "args.h"
#include "command.h"
#include "llmwb/errors.h"
#include "format/model_file.h"
#include "model/model_maker.h"
#include "model/model_widen.h"
#include "quant/gguf_model_writer.h"
#include "output_path.h"

namespace llmwb::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLlama2Tokenizer = "shared/models/llama2-tokenizer/tokenizer.model";

// A file under shared/models/... beside an ancestor of the executable or of the working
// directory (the layout of a source checkout next to shared/); "" when there is none.
std::string find_shared(const std::string& rel) {
  std::vector<fs::path> starts;
  std::error_code ec;
  if (fs::path exe = fs::read_symlink("/proc/self/exe", ec); !ec) starts.push_back(exe.parent_path());
  if (fs::path cwd = fs::current_path(ec); !ec) starts.push_back(cwd);
  for (fs::path p : starts) {
    for (int up = 0; up < 6 && !p.empty(); ++up, p = p.parent_path()) {
      if (fs::exists(p / rel)) return (p / rel).string();
      if (p == p.parent_path()) break;
    }
  }
  return "";
}

// The Llama 2 tokenizer for 32000-piece vocabularies when --tokenizer is not given:
// $LLMWB_LLAMA2_TOKENIZER, else shared/models/... (find_shared).
std::string find_llama2_tokenizer() {
  if (const char* env = std::getenv("LLMWB_LLAMA2_TOKENIZER"); env && *env) return env;
  return find_shared(kLlama2Tokenizer);
}

// The real tokenizer a preset carries when --tokenizer is not given: the Llama 3 and Qwen
// tokenizer.json files under shared/models ("" for the other presets).
std::string preset_tokenizer_rel(const std::string& preset) {
  if (preset.starts_with("llama3")) return "shared/models/llama3-tokenizer/tokenizer.json";
  if (preset.starts_with("qwen")) return "shared/models/qwen3-tokenizer/tokenizer.json";
  return "";
}

std::string human_bytes(uint64_t b) {
  char buf[32];
  if (b >= (uint64_t{1} << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(b) / (1 << 30));
  else if (b >= (1u << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1 << 20));
  else
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(b));
  return buf;
}

// make-model --from MODEL --widen F: the trained model made F times wider, the same function
// (model_widen.h), written as GGUF.
int run_widen(const Args& a) {
  for (const char* f : {"arch", "tokenizer", "dim", "layers", "heads", "kv-heads", "ffn", "vocab", "ctx", "theta",
                        "shard-size", "family", "head-dim", "tied"})
    if (a.has(f)) throw UsageError(std::string("--") + f + " does not go with --from (the source model sets it)");
  if (!a.has("widen")) throw UsageError("--from needs --widen F (how many times wider)");
  if (a.str("format", "gguf") != "gguf") throw UsageError("--format: a widened model is written as gguf");
  WidenOptions w;
  w.factor = static_cast<int>(a.integer("widen", 2, 1, 256));
  w.noise = static_cast<float>(a.real("noise", 0.0, 0.0, 1.0));
  w.seed = a.u64("seed").value_or(0);
  const std::string dt = a.str("dtype", "f32");
  if (!dtype_from_name(dt, &w.dtype) || (w.dtype != DType::F32 && w.dtype != DType::F16 && w.dtype != DType::BF16))
    throw UsageError("--dtype: a widened model is f32, f16 or bf16, not '" + dt + "' (quantize it afterwards)");
  const std::string from = a.str("from"), out = a.str("out");
  prepare_output_file("out", out, {from}, false);
  const auto t0 = std::chrono::steady_clock::now();
  const auto src = load_model_file(from);
  auto wide = widen_model(*src, w);
  if (a.has("name")) wide->config.name = a.str("name");
  write_model_gguf(*wide, out, "");
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const ModelConfig& c = wide->config;
  const double p = static_cast<double>(model_param_count(c));
  std::printf("wrote %s (gguf, %s, %s: %s widened %dx, dim %d, ffn %d, %d heads / %d KV heads of %d, %.2f %s parameters%s)\n",
              out.c_str(), dtype_name(w.dtype), c.name.c_str(), from.c_str(), w.factor, c.dim, c.hidden_dim, c.n_heads,
              c.n_kv_heads, c.head_dim, p >= 1e9 ? p / 1e9 : p / 1e6, p >= 1e9 ? "B" : "M",
              w.noise > 0 ? (", noise " + std::to_string(w.noise) + " x RMS").c_str() : ", the source's function");
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(out, ec);
  std::printf("%s in %.2f s\n", ec ? "?" : human_bytes(bytes).c_str(), secs);
  return 0;
}

int run_make_model(const std::vector<std::string>& argv) {
  Args a(argv,
         {"arch", "dtype", "format", "seed", "out", "tokenizer", "dim", "layers", "heads", "kv-heads", "ffn", "vocab",
          "ctx", "theta", "shard-size", "name", "family", "head-dim", "from", "widen", "noise"},
         {"tied"});
  if (!a.has("out")) throw UsageError("--out is required");
  if (a.has("from")) return run_widen(a);
  for (const char* f : {"widen", "noise"})
    if (a.has(f)) throw UsageError(std::string("--") + f + " goes with --from MODEL");
  if (!a.has("arch")) throw UsageError("--arch is required (or --from MODEL --widen F)");
  const std::string arch = a.str("arch");

  ModelMakerOptions o;
  const std::vector<std::string> shape_flags = {"dim", "layers", "heads", "kv-heads", "ffn", "vocab", "ctx", "tied",
                                                 "family", "head-dim"};
  if (arch == "custom") {
    for (const char* f : {"dim", "layers", "heads", "ffn", "vocab"})
      if (!a.has(f)) throw UsageError(std::string("--arch custom needs --") + f);
    ModelConfig& c = o.config;
    c.name = "custom";
    c.dim = static_cast<int>(a.integer("dim", 0, 2, 1 << 20));
    c.n_layers = static_cast<int>(a.integer("layers", 0, 1, 1024));
    c.n_heads = static_cast<int>(a.integer("heads", 0, 1, 1024));
    c.n_kv_heads = static_cast<int>(a.integer("kv-heads", c.n_heads, 1, 1024));
    c.hidden_dim = static_cast<int>(a.integer("ffn", 0, 1, 1 << 20));
    c.vocab_size = static_cast<int>(a.integer("vocab", 0, 1, 1 << 22));
    c.max_seq_len = static_cast<int>(a.integer("ctx", 2048, 1, 1 << 24));
    c.tied_embeddings = a.flag("tied");
    c.architecture = a.str("family", "llama");
    if (c.architecture != "llama" && c.architecture != "qwen2" && c.architecture != "qwen3")
      throw UsageError("--family: unknown '" + c.architecture + "' (llama|qwen2|qwen3)");
    if (c.n_heads % c.n_kv_heads != 0)
      throw UsageError("--kv-heads " + std::to_string(c.n_kv_heads) + " does not divide --heads " + std::to_string(c.n_heads));
    if (a.has("head-dim")) {
      c.head_dim = static_cast<int>(a.integer("head-dim", 0, 2, 1 << 16));
      if (c.head_dim % 2 != 0) throw UsageError("--head-dim " + std::to_string(c.head_dim) + " must be even (RoPE rotates pairs)");
    } else {
      if (c.dim % c.n_heads != 0)
        throw UsageError("--dim " + std::to_string(c.dim) + " is not a multiple of --heads " + std::to_string(c.n_heads) +
                         " (or give --head-dim)");
      c.head_dim = c.dim / c.n_heads;
      if (c.head_dim % 2 != 0) throw UsageError("--dim / --heads = " + std::to_string(c.head_dim) + " must be even (RoPE rotates pairs)");
    }
  } else {
    if (!model_preset(arch, &o.config)) {
      std::string names;
      for (const auto& n : model_preset_names()) names += n + "|";
      throw UsageError("--arch: unknown '" + arch + "' (" + names + "custom)");
    }
    for (const auto& f : shape_flags)
      if (a.has(f)) throw UsageError("--" + f + " is only for --arch custom");
  }
  if (a.has("name")) o.config.name = a.str("name");
  o.config.rope_theta = static_cast<float>(a.real("theta", o.config.rope_theta, 1.0, 1e12));

  const std::string dt = a.str("dtype", "f32");
  if (!dtype_from_name(dt, &o.dtype)) throw UsageError("--dtype: unknown '" + dt + "' (f32|f16|bf16|q8_0|q4_0)");
  o.format = a.str("format", "gguf");
  if (o.format != "gguf" && o.format != "safetensors") throw UsageError("--format: '" + o.format + "' is not gguf or safetensors");
  if (o.format == "safetensors" && (o.dtype == DType::Q8_0 || o.dtype == DType::Q4_0))
    throw UsageError("--dtype " + dt + " is GGUF-only: safetensors holds f32, f16 or bf16");
  if (a.has("shard-size") && o.format != "safetensors") throw UsageError("--shard-size is only for --format safetensors");
  o.shard_bytes = a.bytes("shard-size", o.shard_bytes);
  if (o.shard_bytes == 0) throw UsageError("--shard-size must be positive");
  o.seed = a.u64("seed").value_or(0);
  o.out = a.str("out");

  o.tokenizer_path = a.str("tokenizer");
  if (const std::string rel = preset_tokenizer_rel(arch); o.tokenizer_path.empty() && !rel.empty()) {
    o.tokenizer_path = find_shared(rel);
    if (o.tokenizer_path.empty())
      throw UsageError("--arch " + arch + " carries the real tokenizer, " + rel +
                       ", which was not found beside the program: pass --tokenizer PATH/tokenizer.json");
  }
  if (o.tokenizer_path.empty() && o.config.vocab_size == 32000) {
    o.tokenizer_path = find_llama2_tokenizer();
    if (o.tokenizer_path.empty())
      throw UsageError("a 32000-piece vocabulary uses the Llama 2 tokenizer, which was not found beside the program: "
                       "pass --tokenizer PATH/tokenizer.model (or set LLMWB_LLAMA2_TOKENIZER)");
  }

  // The same rules as quantize --out: never a device, FIFO or folder, never the tokenizer read.
  if (o.format == "gguf") prepare_output_file("out", o.out, {o.tokenizer_path}, false);

  const auto t0 = std::chrono::steady_clock::now();
  const MadeModel made = make_model(o);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double p = static_cast<double>(made.n_params);
  std::printf("wrote %s (%s, %s, %s, %.2f %s parameters, vocabulary from %s)\n", o.out.c_str(), o.format.c_str(),
              dtype_name(o.dtype), o.config.name.c_str(), p >= 1e9 ? p / 1e9 : p / 1e6, p >= 1e9 ? "B" : "M",
              o.tokenizer_path.empty() ? "a synthetic byte-level vocabulary" : o.tokenizer_path.c_str());
  if (made.files.size() > 1)
    for (const auto& f : made.files) std::printf("  %s\n", f.c_str());
  std::printf("%s in %.2f s\n", human_bytes(made.bytes).c_str(), secs);
  return 0;
}

const CommandRegistration kRegistration({
    "make-model",
    "write a random-weight Llama or Qwen model (GGUF or safetensors folder) at a real shape",
    "--arch tinyllama-1.1b|llama2-7b|llama-110m|stories15m|llama3.2-1b|qwen2.5-0.5b|qwen3-0.6b|custom --out PATH\n"
    "    [--dtype f32|f16|bf16|q8_0|q4_0] (default f32; q8_0/q4_0 only with gguf)\n"
    "    [--format gguf|safetensors] (default gguf: one file; safetensors: a Hugging Face folder)\n"
    "    [--seed S] (default 0)  [--name NAME]  [--theta ROPE_BASE]\n"
    "    [--tokenizer PATH.model|PATH/tokenizer.json] (default: the real tokenizer of the llama3.2 / qwen\n"
    "        presets, the Llama 2 tokenizer for vocabulary 32000, else a synthetic byte-level vocabulary;\n"
    "        embedded in GGUF; a folder gets tokenizer.model, or tokenizer.json and tokenizer_config.json)\n"
    "    [--shard-size BYTES] (safetensors: shard above this size, default 2G)\n"
    "  custom shape: --dim N --layers N --heads N [--kv-heads N] --ffn N --vocab N [--ctx N] [--tied]\n"
    "    [--family llama|qwen2|qwen3] (qwen2: Q/K/V biases; qwen3: per-head Q/K norm) [--head-dim N]\n"
    "  or: --from MODEL --widen F --out PATH.gguf [--dtype f32|f16|bf16] [--noise R] [--seed S] [--name NAME]\n"
    "    a trained model F times wider computing the same function (every width replicated F times, the\n"
    "    weights that read it divided by F: F^2 times the bytes per token, docs/SPECULATIVE.md);\n"
    "    --noise R adds normal(0, R x each matrix's RMS) so that the copies differ (default 0: exact)",
    &run_make_model,
});

}  // namespace
}  // namespace llmwb::cli
