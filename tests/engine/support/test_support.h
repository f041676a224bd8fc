// test_support.h — helpers shared by the engine tests.
#pragma once

#include <cstdint>
#include <string>

#include "format/tensor.h"

namespace llmwb::test {

// ../shared/models/... beside the repository (read-only).
std::string shared_path(const std::string& rel);
// A fresh, empty scratch folder for one test (under the build tree).
std::string scratch_dir(const std::string& name);
// Whole file as bytes / writes bytes.
std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& bytes);
// Writes a random-weight 2-layer GGUF model of the given shape into the scratch folder
// `<prefix>_<name>_<dtype>`; returns its path.
std::string make_test_model(const std::string& prefix, const std::string& name, int dim, int hidden, int heads,
                            int kv_heads, int vocab, DType dtype, uint64_t seed, int max_seq_len = 256);

}  // namespace llmwb::test
