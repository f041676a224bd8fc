// llmwb/default_model.h — the demo model opened when none is named (stories260K, 260K
// parameters): the copy the package installs beside the binaries first, then the one in the
// source tree's shared/ folder that a build tree uses.
#pragma once

#include <string>
#include <vector>

namespace llmwb {

// Where the demo model is looked for, in order: PREFIX/share/llmwb/models/stories260K/
// stories260K.gguf with PREFIX the folder above the running executable's (so /usr/bin/llmwb-cli
// finds /usr/share/llmwb/...), then shared/models/stories260K/ beside the source tree the
// engine was built from.
std::vector<std::string> default_model_locations();

// The first of default_model_locations() that is a file; empty when none is.
std::string find_default_model();

}  // namespace llmwb
