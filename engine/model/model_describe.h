// model_describe.h — summarises a loaded model file as llmwb::ModelInfo (for `llmwb-cli
// inspect` and the GUI's model panel).
#pragma once

#include "llmwb/model_info.h"
#include "format/model_file.h"

namespace llmwb {

class Tokenizer;

// `tok` may be null (no tokenizer could be found); then the summary falls back to what the
// file carries.
ModelInfo describe_model(const ModelFile& file, const Tokenizer* tok);

}  // namespace llmwb
