// model_file.h — a model as it sits on disk, after its format was parsed: the config,
// every tensor as a view into the mapped file(s) under canonical names, the tokenizer data
// the file carries, and the rest of its metadata.
//
// Canonical tensor names are GGUF's (llama.cpp):
//   token_embd.weight {vocab, dim}          output_norm.weight {dim}     output.weight {vocab, dim}
//   blk.N.attn_norm.weight {dim}            blk.N.ffn_norm.weight {dim}
//   blk.N.attn_q.weight {n_heads*hd, dim}   blk.N.attn_k.weight {n_kv*hd, dim}
//   blk.N.attn_v.weight {n_kv*hd, dim}      blk.N.attn_output.weight {dim, n_heads*hd}
//   blk.N.ffn_gate.weight {hidden, dim} (w1)  blk.N.ffn_up.weight {hidden, dim} (w3)
//   blk.N.ffn_down.weight {dim, hidden} (w2)
// output.weight is absent when the head is tied to the embedding.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "memory/mapped_file.h"
#include "format/model_config.h"
#include "memory/page_buffer.h"
#include "format/tensor.h"

namespace llmwb {

// Vocabulary carried inside a model file (GGUF tokenizer.ggml.*) or read from a llama2.c
// tokenizer .bin. Token types follow SentencePiece / GGUF: 1 normal, 2 unknown, 3 control,
// 4 user defined, 5 unused, 6 byte.
struct TokenizerData {
  std::string source;                 // where it came from, for messages and inspect
  std::string model;                  // "llama" (SentencePiece-style BPE by score)
  std::vector<std::string> pieces;    // "▁the", "<0x0A>", "<s>"
  std::vector<float> scores;
  std::vector<int32_t> types;         // may be empty: then inferred from the pieces
  int bos_id = -1, eos_id = -1, unk_id = 0, pad_id = -1;
  bool add_bos = true;
  std::string chat_template;          // tokenizer.chat_template, if present
  std::string sp_model_path;          // a SentencePiece .model found beside the weights
  bool empty() const { return pieces.empty() && sp_model_path.empty(); }
};

struct ModelFile {
  std::string path;     // the file or folder the user named
  std::string format;   // "gguf", "safetensors", "llama2c"
  ModelConfig config;
  std::vector<TensorView> tensors;   // canonical names, in file order
  TokenizerData tokenizer;
  std::map<std::string, std::string> metadata;  // other keys, stringified (for inspect)
  std::vector<std::shared_ptr<MappedFile>> maps;   // keep the data alive
  std::vector<std::vector<uint8_t>> owned;         // buffers for data that could not be mapped
  std::vector<PageBuffer> quantized;               // tensors quantized at load (weight_quantizer.h)

  const TensorView* find(const std::string& name) const;
  // Throws llmwb::Error(path, "missing tensor 'NAME'").
  const TensorView& get(const std::string& name) const;
  // Discards the load-time quantized buffer starting at `data` (PageBuffer::discard): for a
  // backend that has copied the tensor into its own layout (the CPU backend's 4-bit repack),
  // so that memory holds one copy. The views keep the address, which no longer reads.
  // Returns false when `data` is not such a buffer (mapped or loader-owned data stays).
  bool discard_quantized(const uint8_t* data);
};

using ProgressFn = std::function<bool(double fraction, const std::string& what)>;

// Detects the format from the path (a folder -> Hugging Face; GGUF magic -> GGUF; otherwise
// llama2.c) and loads it. Every problem is an llmwb::Error naming the file and what is wrong.
std::unique_ptr<ModelFile> load_model_file(const std::string& path, const ProgressFn& progress = {});

// Format loaders (each validates offsets, sizes, dtypes and shapes against the file).
std::unique_ptr<ModelFile> load_gguf(const std::string& path);
std::unique_ptr<ModelFile> load_hf_folder(const std::string& dir);
std::unique_ptr<ModelFile> load_llama2c(const std::string& path);

}  // namespace llmwb
