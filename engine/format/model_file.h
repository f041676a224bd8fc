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

// Vocabulary carried inside a model file (GGUF tokenizer.ggml.*), read from a llama2.c
// tokenizer .bin or from a Hugging Face tokenizer.json (format/tokenizer_json.h). Token types
// follow SentencePiece / GGUF: 1 normal, 2 unknown, 3 control, 4 user defined, 5 unused,
// 6 byte. A tokenizer.json added token with "special": true is control (3), one without is
// user defined (4), as llama.cpp's converter writes them.
struct TokenizerData {
  std::string source;                 // where it came from, for messages and inspect
  // "llama": SentencePiece-style BPE by score over "▁" pieces; "gpt2": byte-level BPE by
  // merge rank over pieces spelled in GPT-2's byte-to-unicode alphabet ("Ġthe").
  std::string model;
  std::vector<std::string> pieces;    // "▁the", "<0x0A>", "<s>"; byte-level: "Ġthe", "<|eot_id|>"
  std::vector<float> scores;
  std::vector<int32_t> types;         // may be empty: then inferred from the pieces
  // Byte-level BPE only. Merges in rank order, each "left right" (GGUF tokenizer.ggml.merges).
  std::vector<std::string> merges;
  // The pre-tokenizer (GGUF tokenizer.ggml.pre): "llama-bpe" (Llama 3's regex, digits in
  // runs of up to 3) or "qwen2" (single digits). Names the split regex the tokenizer uses.
  std::string pre;
  // A word that is itself a piece becomes that piece without merging (tokenizer.json
  // "ignore_merges"; Llama 3 sets it). GGUF carries no key: the loader takes it from `pre`.
  bool ignore_merges = false;
  // Unicode normalization applied before pre-tokenization: "" or "NFC" (Qwen2's
  // tokenizer.json). GGUF carries no key: the loader takes it from `pre`.
  std::string normalizer;
  int bos_id = -1, eos_id = -1, unk_id = 0, pad_id = -1;
  // End-of-turn and end-of-message ids beside EOS (GGUF tokenizer.ggml.eot_token_id /
  // eom_token_id; Llama 3's <|eot_id|> and <|eom_id|>), -1 when absent. The tokenizer also
  // treats the control pieces every chat model uses to end a turn as end of generation.
  int eot_id = -1, eom_id = -1;
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
