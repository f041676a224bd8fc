// llmwb/model_probe.h — what a model file or folder is, read from its headers without loading
// its weights (for a model library that lists many models).
#pragma once

#include <string>

#include "llmwb/model_info.h"

namespace llmwb {

// The ModelInfo of a GGUF file, a Hugging Face folder (config.json + safetensors) or a llama2.c
// checkpoint, from its metadata and tensor table: the files are mapped, not read, so a large
// model costs its headers' pages. No tokenizer is loaded (tokenizer fields come from the file
// where it carries them); backend and tuning stay empty. Throws llmwb::Error as loading would
// (naming the file and what is wrong).
ModelInfo probe_model(const std::string& path);

}  // namespace llmwb
