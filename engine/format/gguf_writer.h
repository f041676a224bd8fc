// gguf_writer.h — writes a GGUF v3 file: metadata key/values in insertion order, tensor
// infos, then the tensor data, each tensor aligned to general.alignment (32).
//
// Format: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md (v3, little endian).
// Tensor data is produced lazily by a fill callback while the file is written, so a
// converter can stream a model many times larger than memory to disk one tensor at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "format/tensor.h"

namespace llmwb {

class GgufWriter {
 public:
  void set_str(const std::string& key, const std::string& v);
  void set_u32(const std::string& key, uint32_t v);
  void set_i32(const std::string& key, int32_t v);
  void set_u64(const std::string& key, uint64_t v);
  void set_f32(const std::string& key, float v);
  void set_bool(const std::string& key, bool v);
  void set_str_array(const std::string& key, const std::vector<std::string>& v);
  void set_f32_array(const std::string& key, const std::vector<float>& v);
  void set_i32_array(const std::string& key, const std::vector<int32_t>& v);
  // shape outermost first ({rows, cols}); `fill` writes exactly dtype_row_bytes(dtype, cols) * rows bytes
  // into dst when the tensor is written, so a 13 GB model streams to disk one tensor at a time.
  void add_tensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                  std::function<void(uint8_t* dst)> fill);
  void add_tensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape, const void* data);  // copies nothing until write
  void write(const std::string& path);  // GGUF v3, general.alignment 32; throws Error(path, ...)

 private:
  // One metadata entry, already encoded as GGUF value bytes (type id + payload), so the
  // writer keeps keys in insertion order and a repeated key replaces the earlier value.
  struct KeyValue {
    std::string key;
    std::vector<uint8_t> value;   // gguf_type (u32) followed by the value encoding
  };
  struct Tensor {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    uint64_t nbytes;
    std::function<void(uint8_t* dst)> fill;
  };

  void set_raw(const std::string& key, std::vector<uint8_t> value);

  std::vector<KeyValue> kvs_;
  std::vector<Tensor> tensors_;
};

}  // namespace llmwb
