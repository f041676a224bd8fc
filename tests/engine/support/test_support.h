// test_support.h — helpers shared by the engine tests.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "format/model_config.h"
#include "format/tensor.h"
#include "format/tensor.h"

namespace llmwb {
class SafetensorsWriter;
}

namespace llmwb::test {

// The message of the llmwb::Error that f throws, or "(no error)".
std::string error_of(const std::function<void()>& f);

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

// Rewrites dir/model.safetensors: `first` (if any) goes in front, then every stored tensor
// except `drop`.
void rewrite_safetensors(const std::string& dir, const std::string& drop,
                         const std::function<void(SafetensorsWriter&)>& first = nullptr);

// A 2-layer random-model shape of one architecture family, with its variants: "llama" as
// Llama 3.x (theta 500000, llama3 rope scaling past an original context of `original_ctx`),
// "qwen2" (Q/K/V biases), "qwen3" (per-head Q/K norm; give a head_dim other than dim / 4);
// 4 heads sharing 2 KV heads, tied head.
ModelConfig family_test_config(const std::string& arch, int dim, int hidden, int head_dim, int vocab,
                               int original_ctx = 16);

}  // namespace llmwb::test
