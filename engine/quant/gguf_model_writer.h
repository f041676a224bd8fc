// gguf_model_writer.h — writes a loaded (and possibly quantized) Llama model back out as GGUF,
// the output of `llmwb-cli quantize`.
#pragma once

#include <string>

#include "format/model_file.h"

namespace llmwb {

// Writes every tensor of `file` (as it is now: quantize_weights_in_place repoints them) with the
// llama.cpp metadata keys for `file.config` and the vocabulary the file carries, if any.
// Hugging Face q/k rows (RotateHalf) are permuted back to GGUF's interleaved order, as
// llama.cpp's converter does. `scheme` is recorded under llmwb.quantization.scheme when not
// empty. Throws llmwb::Error(path, ...).
void write_model_gguf(const ModelFile& file, const std::string& path, const std::string& scheme);

}  // namespace llmwb
