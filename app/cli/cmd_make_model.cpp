// llmwb-cli make-model — a random-weight Llama at a real architecture's shape, as GGUF or as a
// Hugging Face safetensors folder, for benchmarks and tests that need big models offline.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "args.h"
#include "command.h"
#include "llmwb/errors.h"
#include "model/model_maker.h"
#include "output_path.h"

namespace llmwb::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLlama2Tokenizer = "shared/models/llama2-tokenizer/tokenizer.model";

// The Llama 2 tokenizer for 32000-piece vocabularies when --tokenizer is not given:
// $LLMWB_LLAMA2_TOKENIZER, else shared/models/... beside an ancestor of the executable or of
// the working directory (the layout of a source checkout next to shared/).
std::string find_llama2_tokenizer() {
  if (const char* env = std::getenv("LLMWB_LLAMA2_TOKENIZER"); env && *env) return env;
  std::vector<fs::path> starts;
  std::error_code ec;
  if (fs::path exe = fs::read_symlink("/proc/self/exe", ec); !ec) starts.push_back(exe.parent_path());
  if (fs::path cwd = fs::current_path(ec); !ec) starts.push_back(cwd);
  for (fs::path p : starts) {
    for (int up = 0; up < 6 && !p.empty(); ++up, p = p.parent_path()) {
      if (fs::exists(p / kLlama2Tokenizer)) return (p / kLlama2Tokenizer).string();
      if (p == p.parent_path()) break;
    }
  }
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

int run_make_model(const std::vector<std::string>& argv) {
  Args a(argv,
         {"arch", "dtype", "format", "seed", "out", "tokenizer", "dim", "layers", "heads", "kv-heads", "ffn", "vocab",
          "ctx", "theta", "shard-size", "name"},
         {"tied"});
  if (!a.has("arch")) throw UsageError("--arch is required");
  if (!a.has("out")) throw UsageError("--out is required");
  const std::string arch = a.str("arch");

  ModelMakerOptions o;
  const std::vector<std::string> shape_flags = {"dim", "layers", "heads", "kv-heads", "ffn", "vocab", "ctx", "tied"};
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
    if (c.dim % c.n_heads != 0) throw UsageError("--dim " + std::to_string(c.dim) + " is not a multiple of --heads " + std::to_string(c.n_heads));
    if (c.n_heads % c.n_kv_heads != 0)
      throw UsageError("--kv-heads " + std::to_string(c.n_kv_heads) + " does not divide --heads " + std::to_string(c.n_heads));
    c.head_dim = c.dim / c.n_heads;
    if (c.head_dim % 2 != 0) throw UsageError("--dim / --heads = " + std::to_string(c.head_dim) + " must be even (RoPE rotates pairs)");
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
    "write a random-weight Llama model (GGUF or safetensors folder) at a real shape",
    "--arch tinyllama-1.1b|llama2-7b|llama-110m|stories15m|custom --out PATH\n"
    "    [--dtype f32|f16|bf16|q8_0|q4_0] (default f32; q8_0/q4_0 only with gguf)\n"
    "    [--format gguf|safetensors] (default gguf: one file; safetensors: a Hugging Face folder)\n"
    "    [--seed S] (default 0)  [--name NAME]  [--theta ROPE_BASE]\n"
    "    [--tokenizer PATH.model] (default: the Llama 2 tokenizer for vocabulary 32000, else a synthetic\n"
    "        byte-level vocabulary, embedded in GGUF and written as tokenizer.model in a folder)\n"
    "    [--shard-size BYTES] (safetensors: shard above this size, default 2G)\n"
    "  custom shape: --dim N --layers N --heads N [--kv-heads N] --ffn N --vocab N [--ctx N] [--tied]",
    &run_make_model,
});

}  // namespace
}  // namespace llmwb::cli
