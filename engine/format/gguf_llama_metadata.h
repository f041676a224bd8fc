// gguf_llama_metadata.h — the llama.* hyper-parameter keys and tokenizer.ggml.* vocabulary keys
// of a GGUF file, as llama.cpp's converters write them. Shared by make-model and quantize.
#pragma once

#include <string>
#include <vector>

#include "format/gguf_writer.h"
#include "format/model_config.h"
#include "format/model_file.h"

namespace llmwb {

// Sets general.architecture, every <arch>.* key of `c` (llama.*, qwen2.*, qwen3.*) and, when
// `vocab` has pieces, the tokenizer.ggml.* keys. Throws llmwb::Error(where, ...) for a rope
// scaling GGUF has no keys for.
void set_llama_gguf_metadata(GgufWriter& w, const ModelConfig& c, const TokenizerData& vocab, const std::string& where);

// Llama 3 RoPE scaling as GGUF carries it: the F32 tensor rope_freqs.weight {head_dim / 2} of
// per-pair frequency divisors (what the loader reads into rope_freq_factors). Empty for other
// scalings.
std::vector<float> gguf_rope_freqs(const ModelConfig& c);

}  // namespace llmwb
