// llmwb/model_info.h — what a loaded model is (for `llmwb-cli inspect` and the GUI).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace llmwb {

struct TensorInfo {
  std::string name;             // canonical (GGUF-style) name, e.g. blk.0.attn_q.weight
  std::string dtype;            // F32, F16, BF16, Q8_0, Q4_0, ...
  std::vector<int64_t> shape;   // outermost first: {rows, cols}; cols are contiguous
  uint64_t nbytes = 0;
};

struct ModelInfo {
  std::string path;
  std::string format;           // "gguf", "safetensors", "llama2c"
  std::string architecture;     // "llama"
  std::string name;
  int dim = 0, hidden_dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0;
  int vocab_size = 0, context_length = 0;
  // The context the model was trained for (its file's); context_length is the engine's
  // max_model_len once loaded, which may be set beyond it.
  int trained_context_length = 0;
  float rope_theta = 10000.f, norm_eps = 1e-5f;
  std::string rope_layout;      // "interleaved" (GGUF, llama2.c) or "rotate-half" (Hugging Face)
  std::string rope_scaling;     // "none", "linear x4", "llama3 x8", ...
  bool tied_embeddings = false;
  bool qkv_bias = false;        // Q/K/V projections add a bias (Qwen2)
  bool qk_norm = false;         // per-head RMSNorm of Q and K before RoPE (Qwen3)
  uint64_t n_params = 0;
  uint64_t weight_bytes = 0;
  std::string dtype_summary;    // e.g. "F16 (201 tensors), F32 (45 tensors)"
  std::vector<TensorInfo> tensors;
  std::string tokenizer_kind;   // "sentencepiece", "llama-bpe (from GGUF)", "llama2.c"
  std::string tokenizer_path;
  int tokenizer_vocab = 0;
  int bos_id = 1, eos_id = 2;
  std::string chat_template;    // Jinja text from the file, if any
  std::map<std::string, std::string> metadata;  // other key/values, stringified
  // Where a loaded engine runs it (empty from describe_model alone): "cpu (avx512, 2 threads)",
  // "cuda: NVIDIA H200, 132 SMs, 139.8 GiB, weights 2.05 GiB".
  std::string backend;
  // The engine's tuning switches in effect (TuningConfig::describe; empty from describe_model).
  std::vector<std::pair<std::string, std::string>> tuning;
};

}  // namespace llmwb
