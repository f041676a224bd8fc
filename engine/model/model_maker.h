// model_maker.h — random-weight Llama models at a real architecture's shape, written as GGUF
// or as a Hugging Face safetensors folder (`llmwb-cli make-model`).
//
// Benchmarks and tests need models of the size of TinyLlama or Llama 2 7B without
// downloading them; the weights are random but the files are exactly what the real
// converters write, so every loader, kernel and the tokenizer path get exercised.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/model_config.h"
#include "format/tensor.h"

namespace llmwb {

// Preset shapes: "tinyllama-1.1b", "llama2-7b", "llama-110m", "stories15m". Returns false for
// other names.
bool model_preset(const std::string& name, ModelConfig* out);
const std::vector<std::string>& model_preset_names();
// Parameters of a Llama of this shape (embedding, layers, final norm, untied head).
uint64_t model_param_count(const ModelConfig& c);

struct ModelMakerOptions {
  ModelConfig config;             // shape, context, theta, tied, name
  DType dtype = DType::F32;       // matrices; GGUF keeps norm vectors in F32 as llama.cpp does
  std::string format = "gguf";    // "gguf" (one file) or "safetensors" (a folder)
  uint64_t seed = 0;
  std::string out;                // the .gguf file, or the folder
  // A SentencePiece .model whose pieces become the vocabulary (embedded in GGUF, copied as
  // tokenizer.model into a folder). Empty: a synthetic byte-level vocabulary
  // (synthetic_vocab.h), also saved as tokenizer.model in a folder.
  std::string tokenizer_path;
  uint64_t shard_bytes = uint64_t{2} << 30;   // safetensors: larger folders are sharded
};

struct MadeModel {
  std::vector<std::string> files;   // everything written
  uint64_t bytes = 0;               // their total size
  uint64_t n_params = 0;
};

// Writes the model, one tensor at a time. Throws llmwb::Error naming the option or file.
MadeModel make_model(const ModelMakerOptions& opt);

// The random values, exposed so tests can regenerate them: row `row` (`cols` wide) of the
// tensor with canonical name `name` (GGUF layout: q/k rows in interleaved-RoPE order).
// Deterministic in (seed, name, row): matrices normal(0, 0.02), norm vectors 1 + normal(0, 0.02),
// Q/K norm gains (attn_q_norm, attn_k_norm) 1 + normal(0, 0.25), biases normal(0, 0.5) (Qwen2's real K biases reach tens).
void random_weight_row(uint64_t seed, const std::string& name, int64_t row, int64_t cols, float* out);

}  // namespace llmwb
