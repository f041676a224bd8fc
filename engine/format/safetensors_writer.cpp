// safetensors_writer.cpp — header JSON, 8-byte padding, streamed tensor data.
#include "format/safetensors_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>

#include "llmwb/errors.h"
#include "format/safetensors_file.h"

namespace llmwb {

void SafetensorsWriter::set_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }

void SafetensorsWriter::add_tensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                                   std::function<void(uint8_t* dst)> fill) {
  if (!safetensors_dtype_name(dtype))
    throw Error(name, std::string("safetensors holds F32, F16 or BF16 tensors, not ") + dtype_name(dtype));
  if (name == "__metadata__") throw Error(name, "is reserved for the metadata of a safetensors file");
  for (const auto& t : tensors_)
    if (t.name == name) throw Error(name, "tensor added twice");
  uint64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error(name, "negative dimension in shape");
    numel *= static_cast<uint64_t>(d);
  }
  const uint64_t nbytes = numel * static_cast<uint64_t>(dtype_info(dtype).block_bytes);
  tensors_.push_back({name, dtype, shape, nbytes, std::move(fill)});
  data_bytes_ += nbytes;
}

void SafetensorsWriter::add_tensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                                   const void* data) {
  uint64_t numel = 1;
  for (int64_t d : shape) numel *= static_cast<uint64_t>(d < 0 ? 0 : d);
  const uint64_t nbytes = numel * static_cast<uint64_t>(dtype_info(dtype).block_bytes);
  add_tensor(name, dtype, shape, [data, nbytes](uint8_t* dst) { std::memcpy(dst, data, nbytes); });
}

std::string SafetensorsWriter::header() const {
  // nlohmann::json sorts object keys; the order of keys in the header does not matter to
  // readers, the data_offsets do, and those follow the order tensors were added.
  nlohmann::json h = nlohmann::json::object();
  if (!metadata_.empty()) h["__metadata__"] = metadata_;
  uint64_t pos = 0;
  for (const auto& t : tensors_) {
    h[t.name] = {{"dtype", safetensors_dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {pos, pos + t.nbytes}}};
    pos += t.nbytes;
  }
  std::string s = h.dump();
  // Pad with spaces (valid JSON whitespace) so 8 + N is a multiple of 8.
  s.append((8 - s.size() % 8) % 8, ' ');
  return s;
}

uint64_t SafetensorsWriter::file_size() const { return 8 + header().size() + data_bytes_; }

void SafetensorsWriter::write(const std::string& path) const {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) throw Error(path, std::string("cannot create: ") + std::strerror(errno));
  const std::string h = header();
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(h.size()) >> (8 * i));
  bool ok = std::fwrite(len, 1, 8, f.get()) == 8 && std::fwrite(h.data(), 1, h.size(), f.get()) == h.size();
  std::vector<uint8_t> buf;
  for (const auto& t : tensors_) {
    if (!ok) break;
    buf.resize(t.nbytes);   // the fill writes every byte
    t.fill(buf.data());
    ok = std::fwrite(buf.data(), 1, buf.size(), f.get()) == buf.size();
  }
  if (!ok || std::fflush(f.get()) != 0) throw Error(path, std::string("write failed: ") + std::strerror(errno));
  if (std::fclose(f.release()) != 0) throw Error(path, std::string("close failed: ") + std::strerror(errno));
}

}  // namespace llmwb
