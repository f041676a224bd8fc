// llmwb/engine_config.h — everything that configures one engine instance.
// Field order follows vLLM's LLM(model, tokenizer, tensor_parallel_size, ...).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "llmwb/tuning_config.h"

namespace llmwb {

// Speculative decoding (Leviathan et al. 2023; Chen et al. 2023): a cheap proposer guesses up to
// k tokens, the target scores them all in one pass over k+1 positions and keeps what it would
// have produced itself, so the output is exactly the target's. Names follow vLLM's
// speculative_config.
struct SpeculativeConfig {
  // "" (off), "ngram" (prompt lookup, no second model), "draft_model" (`model`), "self_int4"
  // (the target's own weights quantized to INT4 at load) or "layers" (the target's first
  // `layers` layers with its own final norm and head).
  std::string method;
  int num_speculative_tokens = 0;    // k per step; 0 = adaptive per sequence (1..8)
  std::string model;                 // draft_model: GGUF file or Hugging Face folder
  int prompt_lookup_min = 1;         // ngram: shortest suffix looked up
  int prompt_lookup_max = 3;         // ngram: longest suffix looked up (tried first)
  int layers = 0;                    // layers: early exit after this many layers
  // A model draft (draft_model, self_int4, layers) stops guessing after a token it gives less
  // than this probability (in the spirit of llama.cpp's --draft-p-min), keeping that token (its
  // pass is spent): the guesses after a doubted one are the ones the target rejects, and each
  // costs a draft pass. < 0 = automatic: with adaptive k, the bytes a draft
  // pass reads as a share of what a target step reads (its cost where decoding is bound by
  // memory: a guess is worth its pass when it is likelier to be accepted than that); with a
  // fixed k, 0 (always k guesses). ngram has no probabilities and ignores it.
  double draft_p_min = -1;
  bool draft_p_min_automatic() const { return draft_p_min < 0 && num_speculative_tokens == 0; }

  bool enabled() const { return !method.empty(); }
  // Throws llmwb::Error naming the field when a value is out of range.
  void validate() const;
};

// The speculative methods SpeculativeConfig::method accepts besides "".
const std::vector<std::string>& speculative_methods();
// The short form front ends take (llmwb-cli --spec, the GUI's settings and experiments):
// "" or "off", "draft:PATH", "ngram" or "ngram:MIN:MAX", "self-int4", "layers:K"; with `k`
// tokens per step (0 = adaptive). Throws llmwb::Error("speculative", ...) for anything else.
SpeculativeConfig parse_speculative(const std::string& value, int k = 0);

struct EngineConfig {
  std::string model;                 // GGUF file, Hugging Face folder, or llama2.c .bin
  std::string tokenizer;             // optional: .model (SentencePiece) or llama2.c tokenizer .bin
  int tensor_parallel_size = 1;      // shards per layer (docs/PARALLEL.md); CPU backend
  int pipeline_parallel_size = 1;    // layer stages (docs/PARALLEL.md); CPU backend
  int pipeline_micro_batches = 0;    // micro-batches a step is cut into so that stages overlap; 0 = automatic
  std::string dist = "threads";      // how ranks talk: "threads" (in-process), "mpi" (mpirun) or "nccl" (CUDA ranks, one GPU each)
  std::string backend = "cpu";       // "cpu" or "cuda"
  int threads = 0;                   // CPU threads; 0 = all hardware threads
  int max_model_len = 0;             // context length; 0 = the model's own
  // Paged KV cache
  int block_size = 16;               // tokens per KV block
  uint64_t kv_memory_bytes = 0;      // KV pool budget; 0 = enough for max_num_seqs full contexts,
                                     // capped at kv_memory_fraction of free memory
  double kv_memory_fraction = 0.25;  // share of available memory when kv_memory_bytes == 0
  bool enable_prefix_caching = true;
  // Scheduler
  int max_num_seqs = 64;             // sequences running at once
  int max_num_batched_tokens = 512;  // tokens computed in one step (prefill chunks + decodes)
  // Numerics
  std::string quantize;              // "" (as stored) or a load-time quantization scheme
  std::string kv_dtype = "f32";      // KV cache element type: kv_dtypes()
  SpeculativeConfig speculative;     // off unless speculative.method is set
  // Implementation switches that change no token (kernels, graphs, where rows are sampled);
  // the LLMWB_* environment variables set the defaults.
  TuningConfig tuning = TuningConfig::from_environment();
};

// The load-time quantization schemes EngineConfig::quantize accepts besides "" (the same
// names as llmwb-cli quantize --type; docs/QUANTIZATION.md), for pickers in front ends.
const std::vector<std::string>& quantize_schemes();
// The KV cache element types EngineConfig::kv_dtype accepts ("f32", "f16", "int8").
const std::vector<std::string>& kv_dtypes();

}  // namespace llmwb
