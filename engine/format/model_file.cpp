// model_file.cpp — tensor lookup and format detection.
#include "format/model_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "llmwb/errors.h"

namespace llmwb {

const TensorView* ModelFile::find(const std::string& name) const {
  for (const TensorView& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

bool ModelFile::discard_quantized(const uint8_t* data) {
  for (PageBuffer& b : quantized) {
    if (b.data() == data && !b.discarded()) {
      b.discard();
      return true;
    }
  }
  return false;
}

const TensorView& ModelFile::get(const std::string& name) const {
  if (const TensorView* t = find(name)) return *t;
  throw Error(path, "missing tensor '" + name + "'");
}

std::unique_ptr<ModelFile> load_model_file(const std::string& path, const ProgressFn& progress) {
  auto report = [&](double fraction, const std::string& what) {
    if (progress && !progress(fraction, what)) throw Error(path, "loading cancelled");
  };
  report(0.0, "opening " + path);

  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    throw Error(path, "no such file or directory");
  }
  std::unique_ptr<ModelFile> model;
  if (std::filesystem::is_directory(status)) {
    model = load_hf_folder(path);
  } else if (!std::filesystem::is_regular_file(status)) {
    // Opening a FIFO blocks until a writer comes, and a device never ends: refuse before opening.
    const auto t = status.type();
    const char* kind = t == std::filesystem::file_type::fifo        ? "a FIFO"
                       : t == std::filesystem::file_type::character ? "a character device"
                       : t == std::filesystem::file_type::block     ? "a block device"
                       : t == std::filesystem::file_type::socket    ? "a socket"
                                                                    : "not a regular file";
    throw Error(path, std::string("is ") + kind + ", not a model file (a GGUF file, a llama2.c checkpoint) or folder");
  } else {
    // GGUF files start with the magic "GGUF"; llama2.c checkpoints have no magic at all
    // (they start with the config's int32s), so they are what is left.
    char magic[4] = {};
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path, std::string("cannot open for reading: ") + std::strerror(errno));
    in.read(magic, 4);
    if (in.gcount() == 4 && std::memcmp(magic, "GGUF", 4) == 0) {
      model = load_gguf(path);
    } else {
      // No magic to go by: say what was tried, so a wrong file is not blamed on llama2.c alone.
      try {
        model = load_llama2c(path);
      } catch (const Error& e) {
        std::string why = e.what();
        if (why.rfind(path + ": ", 0) == 0) why = why.substr(path.size() + 2);
        throw Error(path, "not a GGUF file (no 'GGUF' magic), a Hugging Face folder, or a llama2.c checkpoint (" +
                              why + ")");
      }
    }
  }
  report(1.0, "loaded " + path);
  return model;
}

}  // namespace llmwb
