// safetensors_file.h — the parsed header of one .safetensors file, with every tensor as a
// view into the caller's buffer (usually a memory map).
//
// Format (https://huggingface.co/docs/safetensors, "Format"): an 8-byte little-endian
// unsigned header length N, N bytes of UTF-8 JSON {"NAME": {"dtype", "shape",
// "data_offsets": [begin, end]}, ..., "__metadata__": {str: str}}, then the data section.
// Offsets are relative to the start of the data section (byte 8 + N). As the reference
// implementation requires, the tensors must tile the data section exactly: no overlap, no
// holes, nothing after the last tensor — a file that passes cannot hide extra bytes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "format/tensor.h"

namespace llmwb {

struct SafetensorsFile {
  // Stored names (e.g. model.layers.0.self_attn.q_proj.weight), in data-section order.
  std::vector<TensorView> tensors;
  std::map<std::string, std::string> metadata;   // "__metadata__"
  uint64_t data_offset = 0;                      // 8 + header length

  // Parses `size` bytes at `data`. Every bound is checked; a problem throws
  // llmwb::Error(where, ...) whose message names the tensor (or header field) and the bytes
  // involved. Only F32, F16 and BF16 tensors are accepted. The views point into `data`.
  static SafetensorsFile parse(const uint8_t* data, uint64_t size, const std::string& where);

  const TensorView* find(const std::string& name) const;
};

// "F32" / "F16" / "BF16" as the safetensors header spells them.
const char* safetensors_dtype_name(DType t);

}  // namespace llmwb
