// safetensors_writer.h — writes one spec-exact .safetensors file.
//
// Layout (https://huggingface.co/docs/safetensors, "Format"): u64 little-endian header
// length N, the JSON header padded with spaces so that the data section starts at a multiple
// of 8 (as the reference writer does, which keeps every tensor aligned for its dtype), then the
// tensors back to back in the order they were added. Data comes from a fill callback while
// the file is written, so a model larger than memory streams to disk one tensor at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "format/tensor.h"

namespace llmwb {

class SafetensorsWriter {
 public:
  void set_metadata(const std::string& key, const std::string& value);   // "__metadata__"
  // `dtype` must be F32, F16 or BF16 (throws Error(name, ...) otherwise). `fill` writes exactly
  // product(shape) * element size bytes into dst.
  void add_tensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                  std::function<void(uint8_t* dst)> fill);
  void add_tensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape, const void* data);

  // Bytes the file will have (header + data), known before writing.
  uint64_t file_size() const;
  // Throws Error(path, ...) when the file cannot be written.
  void write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    uint64_t nbytes;
    std::function<void(uint8_t* dst)> fill;
  };
  std::string header() const;   // padded JSON

  std::map<std::string, std::string> metadata_;
  std::vector<Tensor> tensors_;
  uint64_t data_bytes_ = 0;
};

}  // namespace llmwb
