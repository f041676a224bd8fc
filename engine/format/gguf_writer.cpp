// gguf_writer.cpp — GGUF v3 output (layout in gguf_file.h; spec:
// https://github.com/ggml-org/ggml/blob/master/docs/gguf.md).
#include "format/gguf_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "llmwb/errors.h"
#include "format/gguf_file.h"

namespace llmwb {

namespace {

constexpr uint32_t kVersion = 3;
constexpr uint64_t kAlignment = 32;   // GGUF_DEFAULT_ALIGNMENT
constexpr size_t kMaxNameBytes = 63;  // ggml tensor names hold 64 bytes with the terminator

template <typename T>
void put(std::vector<uint8_t>* out, T v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out->insert(out->end(), p, p + sizeof(T));
}
void put_string(std::vector<uint8_t>* out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out->insert(out->end(), s.begin(), s.end());
}
void put_type(std::vector<uint8_t>* out, GgufType t) { put<uint32_t>(out, static_cast<uint32_t>(t)); }

template <typename T>
std::vector<uint8_t> scalar(GgufType t, T v) {
  std::vector<uint8_t> out;
  put_type(&out, t);
  put<T>(&out, v);
  return out;
}

template <typename T>
std::vector<uint8_t> numeric_array(GgufType elem, const std::vector<T>& v) {
  std::vector<uint8_t> out;
  put_type(&out, GgufType::ARRAY);
  put_type(&out, elem);
  put<uint64_t>(&out, v.size());
  for (const T& x : v) put<T>(&out, x);
  return out;
}

// Closes the FILE on scope exit; a failed write() leaves no half-written file behind.
struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

}  // namespace

void GgufWriter::set_raw(const std::string& key, std::vector<uint8_t> value) {
  for (KeyValue& kv : kvs_) {
    if (kv.key == key) {
      kv.value = std::move(value);
      return;
    }
  }
  kvs_.push_back({key, std::move(value)});
}

void GgufWriter::set_str(const std::string& key, const std::string& v) {
  std::vector<uint8_t> out;
  put_type(&out, GgufType::STRING);
  put_string(&out, v);
  set_raw(key, std::move(out));
}
void GgufWriter::set_u32(const std::string& key, uint32_t v) { set_raw(key, scalar(GgufType::U32, v)); }
void GgufWriter::set_i32(const std::string& key, int32_t v) { set_raw(key, scalar(GgufType::I32, v)); }
void GgufWriter::set_u64(const std::string& key, uint64_t v) { set_raw(key, scalar(GgufType::U64, v)); }
void GgufWriter::set_f32(const std::string& key, float v) { set_raw(key, scalar(GgufType::F32, v)); }
void GgufWriter::set_bool(const std::string& key, bool v) {
  set_raw(key, scalar<uint8_t>(GgufType::BOOL, v ? 1 : 0));
}

void GgufWriter::set_str_array(const std::string& key, const std::vector<std::string>& v) {
  std::vector<uint8_t> out;
  put_type(&out, GgufType::ARRAY);
  put_type(&out, GgufType::STRING);
  put<uint64_t>(&out, v.size());
  for (const std::string& s : v) put_string(&out, s);
  set_raw(key, std::move(out));
}
void GgufWriter::set_f32_array(const std::string& key, const std::vector<float>& v) {
  set_raw(key, numeric_array(GgufType::F32, v));
}
void GgufWriter::set_i32_array(const std::string& key, const std::vector<int32_t>& v) {
  set_raw(key, numeric_array(GgufType::I32, v));
}

void GgufWriter::add_tensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                            std::function<void(uint8_t* dst)> fill) {
  const std::string where = "tensor '" + name + "'";
  if (name.empty() || name.size() > kMaxNameBytes) {
    throw Error(where, "a GGUF tensor name must have 1 to " + std::to_string(kMaxNameBytes) + " bytes");
  }
  for (const Tensor& t : tensors_) {
    if (t.name == name) throw Error(where, "added twice");
  }
  if (shape.empty() || shape.size() > 4) {
    throw Error(where, "has " + std::to_string(shape.size()) + " dimensions (1 to 4 supported)");
  }
  int64_t rows = 1;
  for (int64_t d : shape) {
    if (d <= 0) throw Error(where, "has a dimension of " + std::to_string(d));
    rows *= d;
  }
  rows /= shape.back();
  const int block = dtype_info(dtype).block_elems;
  if (!dtype_row_fits(dtype, shape.back())) {   // quant: our INT4 types allow a partial last block
    throw Error(where, "has " + std::to_string(shape.back()) + " columns, not a multiple of the " +
                           dtype_name(dtype) + " block size " + std::to_string(block));
  }
  const uint64_t nbytes = dtype_row_bytes(dtype, shape.back()) * static_cast<uint64_t>(rows);
  tensors_.push_back({name, dtype, shape, nbytes, std::move(fill)});
}

void GgufWriter::add_tensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                            const void* data) {
  add_tensor(name, dtype, shape, std::function<void(uint8_t*)>{});
  Tensor& t = tensors_.back();
  const uint64_t n = t.nbytes;
  t.fill = [data, n](uint8_t* dst) { std::memcpy(dst, data, n); };
}

void GgufWriter::write(const std::string& path) {
  // general.alignment is always written, so readers need not assume the default.
  bool has_alignment = false;
  for (const KeyValue& kv : kvs_) has_alignment |= kv.key == "general.alignment";
  if (!has_alignment) set_u32("general.alignment", static_cast<uint32_t>(kAlignment));
  for (const KeyValue& kv : kvs_) {
    if (kv.key == "general.alignment" &&
        kv.value != scalar(GgufType::U32, static_cast<uint32_t>(kAlignment))) {
      throw Error(path, "key 'general.alignment': GgufWriter writes alignment " +
                            std::to_string(kAlignment) + " only");
    }
  }

  std::vector<uint8_t> head;
  head.insert(head.end(), {'G', 'G', 'U', 'F'});
  put<uint32_t>(&head, kVersion);
  put<uint64_t>(&head, tensors_.size());
  put<uint64_t>(&head, kvs_.size());
  for (const KeyValue& kv : kvs_) {
    put_string(&head, kv.key);
    head.insert(head.end(), kv.value.begin(), kv.value.end());
  }
  // Tensor infos: ne in GGUF order (ne0 = the contiguous, last dimension of our shape),
  // offsets relative to the data section, each padded to the alignment.
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    put_string(&head, t.name);
    put<uint32_t>(&head, static_cast<uint32_t>(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) put<uint64_t>(&head, *it);
    put<uint32_t>(&head, dtype_to_gguf(t.dtype));
    put<uint64_t>(&head, offset);
    offset += (t.nbytes + kAlignment - 1) / kAlignment * kAlignment;
  }
  head.resize((head.size() + kAlignment - 1) / kAlignment * kAlignment, 0);

  // Written beside the target and renamed at the end, so a crash or a failing fill never
  // leaves a truncated file that looks like a model.
  const std::string tmp = path + ".partial";
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(tmp.c_str(), "wb"));
  if (!f) throw Error(path, std::string("cannot create: ") + std::strerror(errno));
  auto write_bytes = [&](const uint8_t* p, size_t n) {
    if (n != 0 && std::fwrite(p, 1, n, f.get()) != n) {
      const std::string reason = std::strerror(errno);
      f.reset();
      std::filesystem::remove(tmp);
      throw Error(path, "write failed: " + reason);
    }
  };
  try {
    write_bytes(head.data(), head.size());
    std::vector<uint8_t> buf;
    for (const Tensor& t : tensors_) {
      const uint64_t padded = (t.nbytes + kAlignment - 1) / kAlignment * kAlignment;
      buf.assign(padded, 0);
      t.fill(buf.data());
      write_bytes(buf.data(), buf.size());
    }
  } catch (...) {
    f.reset();
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw;
  }
  const bool flushed = std::fflush(f.get()) == 0;
  if (std::fclose(f.release()) != 0 || !flushed) {
    std::filesystem::remove(tmp);
    throw Error(path, std::string("write failed: ") + std::strerror(errno));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp);
    throw Error(path, "cannot rename " + tmp + ": " + ec.message());
  }
}

}  // namespace llmwb
