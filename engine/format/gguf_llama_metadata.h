// gguf_llama_metadata.h — the llama.* hyper-parameter keys and tokenizer.ggml.* vocabulary keys
// of a GGUF file, as llama.cpp's converters write them. Shared by make-model and quantize.
#pragma once

#include <string>

#include "format/gguf_writer.h"
#include "format/model_config.h"
#include "format/model_file.h"

namespace llmwb {

// Sets every llama.* key of `c` and, when `vocab` has pieces, the tokenizer.ggml.* keys.
// Throws llmwb::Error(where, ...) for a rope scaling GGUF has no keys for.
void set_llama_gguf_metadata(GgufWriter& w, const ModelConfig& c, const TokenizerData& vocab, const std::string& where);

}  // namespace llmwb
