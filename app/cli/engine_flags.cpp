#include "engine_flags.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "llmwb/default_model.h"
#include "llmwb/distributed.h"
#include "llmwb/engine.h"
#include "llmwb/errors.h"

namespace llmwb::cli {

std::string default_model_path() {
  if (const char* env = std::getenv("LLMWB_MODEL"); env && *env) return env;
  if (std::string found = find_default_model(); !found.empty()) return found;
  // A build tree moved away from its sources, run from the checkout or beside it.
  for (const char* rel : {"../shared/models/stories260K/stories260K.gguf", "shared/models/stories260K/stories260K.gguf"})
    if (std::filesystem::exists(rel)) return rel;
  return default_model_locations().front();  // the load error then names the installed location
}

const std::vector<std::string>& engine_value_flags() {
  static const std::vector<std::string> v{"model", "tokenizer", "threads", "backend", "block-size", "kv-memory",
                                          "max-num-seqs", "max-batched-tokens", "max-model-len",
                                          "tensor-parallel-size", "pipeline-parallel-size", "pipeline-micro-batches", "dist",
                                          "quantize", "kv-dtype", "tuning", "spec", "spec-k", "spec-p-min"};
  return v;
}
const std::vector<std::string>& engine_bool_flags() {
  static const std::vector<std::string> v{"no-prefix-cache"};
  return v;
}
const char* engine_flags_usage() {
  return "  --model PATH            GGUF file, Hugging Face folder or llama2.c .bin (default: stories260K)\n"
         "  --tokenizer PATH        SentencePiece .model or llama2.c tokenizer .bin\n"
         "  --threads N             CPU threads (default: all)\n"
         "  --backend cpu|cuda      compute backend (default cpu)\n"
         "  --block-size N          tokens per KV block (default 16)\n"
         "  --kv-memory SIZE        KV pool budget, e.g. 256M, 2G (default: enough for --max-num-seqs contexts)\n"
         "  --max-num-seqs N        sequences running at once (default 64)\n"
         "  --tensor-parallel-size N  split each layer across N ranks (must divide the KV heads; default 1)\n"
         "  --pipeline-parallel-size N  split the layers into N stages (default 1)\n"
         "  --pipeline-micro-batches N|auto  cut each step's batch into N micro-batches that the stages run as a\n"
         "                          pipeline, overlapping (1: stages in turn). auto (default): 1 for --dist\n"
         "                          threads (the stages share the cores); for --dist mpi the stage count when\n"
         "                          the step has 16 tokens per micro-batch, else 1. No token changes\n"
         "  --dist threads|mpi|nccl how ranks communicate: threads (in-process, default; with --backend cuda\n"
         "                          host-staged), mpi (one rank per process: mpirun -np N llmwb-cli ...; only\n"
         "                          rank 0 prints) or nccl (--backend cuda, one GPU per rank)\n"
         "  --max-batched-tokens N  tokens computed per step (default 512)\n"
         "  --max-model-len N       context length (default: the model's)\n"
         "  --no-prefix-cache       disable automatic prefix caching\n"
         "  --kv-dtype f32|f16|int8 KV cache elements (f16: half the memory; int8: a scale per token and\n"
         "                          KV head, ~1/4 the memory)\n"
         "  --quantize SCHEME       quantize the weights at load time (llmwb-cli quantize --help lists schemes)\n"
         "  --spec METHOD           speculative decoding: draft:PATH (a draft model with the same vocabulary),\n"
         "                          ngram[:MIN:MAX] (prompt lookup, default 1:3), self-int4 (the model's own\n"
         "                          weights at 4 bits), layers:K (its first K layers); the output is unchanged\n"
         "  --spec-k K|auto         tokens guessed per step (default auto: adapts per sequence, 1..8, and\n"
         "                          stops where the measured cost of a draft and a verify pass outweighs\n"
         "                          the tokens its acceptance yields)\n"
         "  --spec-p-min P|auto     a draft model stops guessing after a token it gives less than P probability\n"
         "                          (0 = always guess k). auto (default): with --spec-k auto, the bytes a\n"
         "                          draft pass reads as a share of a target step's; 0 with a fixed k\n"
         "  --tuning NAME=VALUE     a tuning switch (repeatable): simd=best|scalar|avx2|avx512, float_panels,\n"
         "                          cuda_graphs, nvtx_layers, device_sampling =on|off (llmwb-cli --help lists\n"
         "                          the LLMWB_* variables that set their defaults); no switch changes a token\n";
}

nlohmann::json draft_p_min_json(const SpeculativeConfig& s) {
  if (s.draft_p_min_automatic()) return "auto";
  return std::max(0.0, s.draft_p_min);
}

SpeculativeConfig speculative_config_from(const std::string& v) {
  try {
    return parse_speculative(v);
  } catch (const Error& e) {
    // "speculative: 'x' is not ..." -> "--spec: 'x' is not ..."
    const std::string what = e.what();
    const size_t colon = what.find(": ");
    throw UsageError("--spec: " + (colon == std::string::npos ? what : what.substr(colon + 2)));
  }
}

EngineConfig engine_config_from(const Args& a) {
  EngineConfig c;
  c.model = a.str("model", default_model_path());
  c.tokenizer = a.str("tokenizer");
  c.threads = static_cast<int>(a.integer("threads", 0, 0, 1024));
  c.backend = a.str("backend", "cpu");
  if (c.backend != "cpu" && c.backend != "cuda") throw UsageError("--backend: '" + c.backend + "' is not cpu or cuda");
  c.block_size = static_cast<int>(a.integer("block-size", 16, 1, 1024));
  c.kv_memory_bytes = a.bytes("kv-memory", 0);
  c.max_num_seqs = static_cast<int>(a.integer("max-num-seqs", 64, 1, 4096));
  c.max_num_batched_tokens = static_cast<int>(a.integer("max-batched-tokens", 512, 1, 1 << 20));
  c.max_model_len = static_cast<int>(a.integer("max-model-len", 0, 0, 1 << 24));
  c.tensor_parallel_size = static_cast<int>(a.integer("tensor-parallel-size", 1, 1, 64));
  c.pipeline_parallel_size = static_cast<int>(a.integer("pipeline-parallel-size", 1, 1, 64));
  c.pipeline_micro_batches = a.str("pipeline-micro-batches", "auto") == "auto"
                                 ? 0
                                 : static_cast<int>(a.integer("pipeline-micro-batches", 0, 0, 4096));
  c.dist = a.str("dist", "threads");
  if (c.dist == "mpi" && !mpi_built())
    throw UsageError("--dist: 'mpi' is not available: this build has no MPI (install libopenmpi-dev, reconfigure)");
  if (c.dist == "nccl" && !nccl_built())
    throw UsageError("--dist: 'nccl' is not available: this build has no NCCL (the CUDA toolkit's nccl.h and "
                     "libnccl, LLMWB_NCCL=ON)");
  if (c.dist == "nccl" && c.backend != "cuda") throw UsageError("--dist: nccl runs the cuda backend's ranks (--backend cuda)");
  if (c.dist != "threads" && c.dist != "mpi" && c.dist != "nccl")
    throw UsageError("--dist: '" + c.dist + "' is not available (threads: ranks as threads of this process; " +
                     "mpi: one rank per process under mpirun; nccl: CUDA ranks, one GPU each)");
  c.enable_prefix_caching = !a.flag("no-prefix-cache");
  c.quantize = a.str("quantize");
  c.kv_dtype = a.str("kv-dtype", "f32");
  const auto& kv = kv_dtypes();
  if (std::find(kv.begin(), kv.end(), c.kv_dtype) == kv.end())
    throw UsageError("--kv-dtype: '" + c.kv_dtype + "' is not f32, f16 or int8");
  if (a.has("spec")) {
    c.speculative = speculative_config_from(a.str("spec"));
    if (!c.speculative.enabled()) throw UsageError("--spec: 'off' needs no flag; leave --spec out");
  }
  if (a.has("spec-k")) {
    if (!c.speculative.enabled()) throw UsageError("--spec-k: needs --spec");
    const std::string k = a.str("spec-k");
    if (k != "auto") c.speculative.num_speculative_tokens = static_cast<int>(a.integer("spec-k", 0, 1, 64));
  }
  if (a.has("spec-p-min")) {
    if (!c.speculative.enabled()) throw UsageError("--spec-p-min: needs --spec");
    if (c.speculative.method == "ngram") throw UsageError("--spec-p-min: ngram guesses carry no probability; it applies to draft:, self-int4 and layers:");
    if (a.str("spec-p-min") != "auto") {
      const double p = a.real("spec-p-min", 0, 0, 1);
      if (p >= 1) throw UsageError("--spec-p-min: must be below 1 (a draft never gives more), got " + a.str("spec-p-min"));
      c.speculative.draft_p_min = p;
    }
  }
  for (const std::string& t : a.all("tuning")) {
    const size_t eq = t.find('=');
    if (eq == std::string::npos) throw UsageError("--tuning: '" + t + "' is not NAME=VALUE");
    try {
      c.tuning.set(t.substr(0, eq), t.substr(eq + 1));
    } catch (const Error& e) {
      throw UsageError(std::string("--tuning: ") + e.what());
    }
  }
  // Under mpirun with --dist mpi every process but rank 0 serves rank 0's steps and exits when rank 0
  // ends: the command itself (and everything it prints) runs on rank 0 only.
  if (c.dist == "mpi") {
    if (is_mpi_worker_process()) {
      std::fflush(stdout);
      std::exit(run_mpi_worker_process(c));
    }
    mpi_start();
  }
  return c;
}

void warn_beyond_trained_context(const Engine& engine, const char* command) {
  const ModelInfo& m = engine.model_info();
  if (m.trained_context_length <= 0 || m.context_length <= m.trained_context_length) return;
  std::fprintf(stderr,
               "llmwb-cli %s: warning: --max-model-len %d is beyond the %d tokens %s was trained for: output past "
               "%d tokens is not promised to make sense, and the KV pool is sized for %d (%.1f MiB)\n",
               command, m.context_length, m.trained_context_length, m.name.empty() ? "the model" : m.name.c_str(),
               m.trained_context_length, m.context_length,
               static_cast<double>(engine.telemetry().kv_bytes_total) / (1024.0 * 1024.0));
}

const std::vector<std::string>& sampling_value_flags() {
  static const std::vector<std::string> v{"temperature", "top-p", "top-k", "min-p", "repetition-penalty",
                                          "max-tokens", "seed", "stop", "n"};
  return v;
}
const char* sampling_flags_usage() {
  return "  --temperature T         0 = greedy (default 0.8)\n"
         "  --top-p P               nucleus sampling (default 0.95)\n"
         "  --top-k K               keep the K most likely tokens (default 0 = all)\n"
         "  --min-p P               drop tokens below P x the most likely (default 0)\n"
         "  --repetition-penalty R  (default 1 = off)\n"
         "  --max-tokens N          completion tokens at most (default 256)\n"
         "  --seed S                per-request seed: same seed, same output\n"
         "  --stop TEXT             stop string (repeatable)\n"
         "  --n N                   samples per prompt (default 1)\n";
}

SamplingParams sampling_params_from(const Args& a) {
  SamplingParams p;
  p.temperature = static_cast<float>(a.real("temperature", 0.8, 0.0, 100.0));
  p.top_p = static_cast<float>(a.real("top-p", 0.95, 1e-6, 1.0));
  p.top_k = static_cast<int>(a.integer("top-k", 0, 0, 1 << 30));
  p.min_p = static_cast<float>(a.real("min-p", 0.0, 0.0, 1.0));
  p.repetition_penalty = static_cast<float>(a.real("repetition-penalty", 1.0, 1e-3, 100.0));
  p.max_tokens = static_cast<int>(a.integer("max-tokens", 256, 1, 1 << 24));
  p.seed = a.u64("seed");
  p.stop = a.all("stop");
  for (const auto& s : p.stop)
    if (s.empty()) throw UsageError("--stop: empty stop string");
  p.n = static_cast<int>(a.integer("n", 1, 1, 64));
  return p;
}

std::vector<std::string> join(std::initializer_list<std::vector<std::string>> lists) {
  std::vector<std::string> out;
  for (const auto& l : lists) out.insert(out.end(), l.begin(), l.end());
  return out;
}

}  // namespace llmwb::cli
