// engine_load.cpp — Engine start-up: the model file, its tokenizer and weights, the runner for
// the configured device, and the KV pool sized for it.
#include <algorithm>

#include "core/engine_impl.h"
#include "llmwb/errors.h"
#include "model/model_describe.h"
#include "quant/weight_quantizer.h"

namespace llmwb {

namespace {

void validate(const EngineConfig& cfg) {
  if (cfg.backend == "cuda" && !cuda_unavailable_reason().empty())
    throw Error("backend", "'cuda' is not available: " + cuda_unavailable_reason());
  if (cfg.tensor_parallel_size < 1 || cfg.tensor_parallel_size > 64)
    throw Error("tensor_parallel_size", "must be in [1, 64], got " + std::to_string(cfg.tensor_parallel_size));
  if (cfg.pipeline_parallel_size < 1 || cfg.pipeline_parallel_size > 64)
    throw Error("pipeline_parallel_size", "must be in [1, 64], got " + std::to_string(cfg.pipeline_parallel_size));
  if (cfg.pipeline_micro_batches < 0 || cfg.pipeline_micro_batches > 4096)
    throw Error("pipeline_micro_batches", "must be in [0, 4096] (0: automatic), got " +
                                              std::to_string(cfg.pipeline_micro_batches));
  if (cfg.block_size < 1 || cfg.block_size > 1024) throw Error("block_size", "must be in [1, 1024], got " + std::to_string(cfg.block_size));
  if (cfg.max_num_seqs < 1) throw Error("max_num_seqs", "must be >= 1");
  if (cfg.max_num_batched_tokens < 1) throw Error("max_num_batched_tokens", "must be >= 1");
  if (cfg.max_model_len < 0) throw Error("max_model_len", "must be >= 0");
  cfg.speculative.validate();
}

}  // namespace

void Engine::Impl::load(const LoadProgress& progress) {
  auto report = [&](double f, const std::string& what) {
    if (progress && !progress(f, what)) throw Error(cfg.model, "loading cancelled");
  };
  if (cfg.backend != "cpu" && cfg.backend != "cuda")
    throw Error("backend", "'" + cfg.backend + "' is not a backend (cpu or cuda)");
  validate(cfg);
  KVDType kv_dtype;
  if (!kv_dtype_from_name(cfg.kv_dtype, &kv_dtype))
    throw Error("kv_dtype", "'" + cfg.kv_dtype + "' is not a KV cache type (f32, f16 or int8)");

  report(0.0, "reading " + cfg.model);
  file = load_model_file(cfg.model, [&](double f, const std::string& what) {
    return !progress || progress(0.05 + 0.15 * f, what);
  });
  file->config.validate(file->path);
  tok = load_tokenizer_for(*file, cfg.tokenizer);
  output = std::make_unique<OutputProcessor>(*tok);
  LlamaWeights weights = LlamaWeights::bind(*file);
  if (!cfg.quantize.empty()) {
    report(0.2, "quantizing to " + cfg.quantize);
    // Unknown scheme: Error("quantize", ...). On CUDA a k-quant head is Q8_0 (for_backend).
    quantize_weights_in_place(*file, weights, cfg.quantize, cfg.backend);
  }

  // Touch every weight page once, in order, so the model is resident before the first request
  // and the progress bar means something; cancellable between tensors.
  uint64_t total = 0, done = 0;
  for (const auto& t : file->tensors) total += t.nbytes;
  volatile uint8_t sink = 0;
  for (const auto& t : file->tensors) {
    for (uint64_t off = 0; off < t.nbytes; off += 4096) sink = sink + t.data[off];
    done += t.nbytes;
    report(0.2 + 0.7 * (total ? double(done) / double(total) : 1.0), "loading " + t.name);
  }
  (void)sink;

  runner = make_model_runner(cfg.backend, cfg.threads, cfg.tuning, *file, std::move(weights),
                             [&](double f, const std::string& what) { return !progress || progress(0.9 + 0.1 * f, what); },
                             ParallelLayout{cfg.tensor_parallel_size, cfg.pipeline_parallel_size, cfg.dist, cfg.quantize,
                                            cfg.pipeline_micro_batches});
  caps = runner->capabilities();
  const std::vector<KVDType>& kinds = caps.kv_dtypes;
  if (std::find(kinds.begin(), kinds.end(), kv_dtype) == kinds.end())
    throw Error("kv_dtype", "'" + cfg.kv_dtype + "' is not a KV cache type the " + cfg.backend + " backend can hold");
  const ModelConfig& c = file->config;
  // An explicit max_model_len may exceed the length the model was trained for (as llama.cpp's
  // -c allows): RoPE is defined at every position, though quality past it is not promised.
  max_model_len = cfg.max_model_len > 0 ? cfg.max_model_len : c.max_seq_len;

  // KV pool: the budget given, else enough for max_num_seqs full contexts, capped at a share
  // of the memory the runner has free now. Pages are only touched as blocks fill.
  const uint64_t per_block = KVCache::bytes_per_block(c.n_layers, cfg.block_size, c.n_kv_heads, c.head_dim, kv_dtype);
  uint64_t budget = cfg.kv_memory_bytes;
  if (budget == 0) {
    const uint64_t want = per_block * uint64_t(cfg.max_num_seqs) * ((max_model_len + cfg.block_size - 1) / cfg.block_size);
    const uint64_t cap = static_cast<uint64_t>(cfg.kv_memory_fraction * double(runner->kv_memory_available()));
    budget = std::min(want, std::max<uint64_t>(cap, per_block));
  }
  const int num_blocks = static_cast<int>(std::min<uint64_t>(budget / per_block, 1u << 30));
  if (num_blocks < 1)
    throw Error("kv_memory", "budget of " + std::to_string(budget) + " bytes holds no KV block (one block needs " +
                                 std::to_string(per_block) + " bytes)");
  runner->allocate_kv(num_blocks, cfg.block_size, kv_dtype);
  kv_bytes = per_block * uint64_t(num_blocks);
  blocks = std::make_unique<BlockManager>(num_blocks, cfg.block_size, cfg.enable_prefix_caching);
  SchedulerConfig sc;
  sc.max_num_seqs = cfg.max_num_seqs;
  sc.max_num_batched_tokens = cfg.max_num_batched_tokens;
  sched = std::make_unique<Scheduler>(sc, *blocks);
  if (cfg.speculative.enabled()) {
    report(0.95, "loading the " + cfg.speculative.method + " proposer");
    ProposerTarget t;
    t.file = file.get();
    t.tokenizer = tok.get();
    t.runner = runner.get();
    t.runner_exits_early = caps.early_exit;
    t.num_blocks = num_blocks;
    t.block_size = cfg.block_size;
    t.kv_dtype = kv_dtype;
    proposer = make_proposer(cfg, t);
    telemetry.speculative_method = proposer->name();
  }

  info = describe_model(*file, tok.get());
  info.context_length = max_model_len;
  info.backend = runner->describe();
  info.tuning = cfg.tuning.describe();
  telemetry.block_size = cfg.block_size;
  telemetry.blocks_total = num_blocks;
  telemetry.blocks_free = num_blocks;
  telemetry.kv_bytes_total = kv_bytes;
  telemetry.kv_dtype = kv_dtype_name(kv_dtype);
  report(1.0, "ready");
}

}  // namespace llmwb
