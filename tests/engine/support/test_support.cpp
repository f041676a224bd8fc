#include "test_support.h"

#include "memory/mapped_file.h"
#include "model/model_maker.h"
#include "format/safetensors_file.h"
#include "format/safetensors_writer.h"
#include "llmwb/errors.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace llmwb::test {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}


// The environment may move both folders (tests/gpu/run-device.sh runs binaries built elsewhere).
static std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::string shared_path(const std::string& rel) { return env_or("LLMWB_SHARED_DIR", LLMWB_SHARED_DIR) + "/" + rel; }

std::string scratch_dir(const std::string& name) {
  std::filesystem::path p = std::filesystem::path(env_or("LLMWB_TEST_TMP", LLMWB_TEST_TMP)) / name;
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

std::string make_test_model(const std::string& prefix, const std::string& name, int dim, int hidden, int heads,
                            int kv_heads, int vocab, DType dtype, uint64_t seed, int max_seq_len) {
  ModelMakerOptions o;
  o.config.name = name;
  o.config.dim = dim;
  o.config.hidden_dim = hidden;
  o.config.n_layers = 2;
  o.config.n_heads = heads;
  o.config.n_kv_heads = kv_heads;
  o.config.head_dim = dim / heads;
  o.config.vocab_size = vocab;
  o.config.max_seq_len = max_seq_len;
  o.dtype = dtype;
  o.seed = seed;
  o.out = scratch_dir(prefix + "_" + name + "_" + dtype_name(dtype)) + "/m.gguf";
  make_model(o);
  return o.out;
}

void rewrite_safetensors(const std::string& dir, const std::string& drop,
                         const std::function<void(SafetensorsWriter&)>& first) {
  SafetensorsWriter w;
  if (first) first(w);
  {
    MappedFile map(dir + "/model.safetensors");
    const SafetensorsFile f = SafetensorsFile::parse(map.data(), map.size(), map.path());
    for (const auto& t : f.tensors) {
      if (t.name == drop) continue;
      w.add_tensor(t.name, t.dtype, t.shape, [bytes = std::vector<uint8_t>(t.data, t.data + t.nbytes)](uint8_t* dst) {
        std::memcpy(dst, bytes.data(), bytes.size());
      });
    }
  }
  const std::string tmp = dir + "/model.safetensors.new";
  w.write(tmp);
  std::filesystem::rename(tmp, dir + "/model.safetensors");
}

ModelConfig family_test_config(const std::string& arch, int dim, int hidden, int head_dim, int vocab,
                               int original_ctx) {
  ModelConfig c;
  c.name = "family-" + arch;
  c.architecture = arch;
  c.dim = dim;
  c.hidden_dim = hidden;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = head_dim;
  c.vocab_size = vocab;
  c.max_seq_len = 512;
  c.norm_eps = 1e-6f;
  c.tied_embeddings = true;
  if (arch == "llama") {
    c.rope_theta = 500000.f;
    c.rope_scaling.type = "llama3";
    c.rope_scaling.factor = 8.f;
    c.rope_scaling.original_max_position = original_ctx;
  }
  return c;
}

}  // namespace llmwb::test
