// model_maker.cpp — random Llama models written as GGUF (llama.cpp's keys and tensor names)
// or as a Hugging Face folder (config.json, safetensors shards, tokenizer.model).
//
// Values come from a counter-based scheme: each row has its own SplitMix64 stream seeded from
// (seed, tensor name, row), so any row can be produced alone. That is what lets the
// safetensors writer emit q/k rows in Hugging Face's rotate-half order while holding the very
// same model as the GGUF (whose q/k rows are in the interleaved order llama.cpp uses).
#include "model/model_maker.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <sentencepiece_processor.h>
#include <thread>

#include "llmwb/errors.h"
#include "format/gguf_llama_metadata.h"
#include "format/gguf_writer.h"
#include "format/model_file.h"
#include "format/safetensors_writer.h"
#include "model/synthetic_vocab.h"

namespace llmwb {

namespace {

namespace fs = std::filesystem;

// SplitMix64 (Steele, Lea, Flood 2014): a fast, well-mixed 64-bit generator.
uint64_t splitmix64(uint64_t* s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

bool is_norm(const std::string& name) { return name.find("norm") != std::string::npos; }

struct Planned {
  std::string canon;              // GGUF name
  std::string hf;                 // Hugging Face name
  std::vector<int64_t> shape;
  int rope_heads = 0;             // > 0: q/k, rows permuted to rotate-half in the HF folder
};

std::vector<Planned> plan_tensors(const ModelConfig& c) {
  const int64_t d = c.dim, h = c.hidden_dim, hd = c.head_dim, q = c.n_heads * hd, kv = c.n_kv_heads * hd;
  std::vector<Planned> p = {{"token_embd.weight", "model.embed_tokens.weight", {c.vocab_size, d}, 0}};
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string g = "blk." + std::to_string(l) + ".", f = "model.layers." + std::to_string(l) + ".";
    p.push_back({g + "attn_norm.weight", f + "input_layernorm.weight", {d}, 0});
    p.push_back({g + "attn_q.weight", f + "self_attn.q_proj.weight", {q, d}, c.n_heads});
    p.push_back({g + "attn_k.weight", f + "self_attn.k_proj.weight", {kv, d}, c.n_kv_heads});
    p.push_back({g + "attn_v.weight", f + "self_attn.v_proj.weight", {kv, d}, 0});
    p.push_back({g + "attn_output.weight", f + "self_attn.o_proj.weight", {d, q}, 0});
    p.push_back({g + "ffn_norm.weight", f + "post_attention_layernorm.weight", {d}, 0});
    p.push_back({g + "ffn_gate.weight", f + "mlp.gate_proj.weight", {h, d}, 0});
    p.push_back({g + "ffn_up.weight", f + "mlp.up_proj.weight", {h, d}, 0});
    p.push_back({g + "ffn_down.weight", f + "mlp.down_proj.weight", {d, h}, 0});
  }
  p.push_back({"output_norm.weight", "model.norm.weight", {d}, 0});
  if (!c.tied_embeddings) p.push_back({"output.weight", "lm_head.weight", {c.vocab_size, d}, 0});
  return p;
}

uint64_t numel(const std::vector<int64_t>& s) {
  uint64_t n = 1;
  for (int64_t d : s) n *= static_cast<uint64_t>(d);
  return n;
}

// Fills a whole tensor in `dt`. With `rope_heads` > 0 (HF output), row r of head h takes the
// canonical row that rotate-half pairs with interleaved RoPE: index i < hd/2 <- 2i,
// i >= hd/2 <- 2(i - hd/2) + 1 (the permutation of transformers' convert_llama_weights_to_hf).
std::function<void(uint8_t*)> filler(uint64_t seed, const Planned& t, DType dt) {
  return [seed, t, dt](uint8_t* dst) {
    const int64_t cols = t.shape.back();
    const int64_t rows = t.shape.size() == 1 ? 1 : t.shape[0];
    const int64_t hd = t.rope_heads > 0 ? rows / t.rope_heads : 0;
    const uint64_t rb = dtype_row_bytes(dt, cols);
    auto fill_rows = [&](int64_t r0, int64_t r1) {
      std::vector<float> row(static_cast<size_t>(cols));
      for (int64_t r = r0; r < r1; ++r) {
        int64_t src = r;
        if (hd > 0) {
          const int64_t h = r / hd, i = r % hd;
          src = h * hd + (i < hd / 2 ? 2 * i : 2 * (i - hd / 2) + 1);
        }
        random_weight_row(seed, t.canon, src, cols, row.data());
        quantize_row(dt, row.data(), dst + r * rb, cols);
      }
    };
    // Rows are independent, so a big tensor is split across cores; the bytes do not depend
    // on how many threads ran.
    const int64_t n_threads = std::min<int64_t>(std::max(1u, std::thread::hardware_concurrency()),
                                                rows * cols / (int64_t{1} << 20) + 1);
    std::vector<std::thread> pool;
    for (int64_t k = 1; k < n_threads; ++k) pool.emplace_back(fill_rows, rows * k / n_threads, rows * (k + 1) / n_threads);
    fill_rows(0, rows / n_threads);
    for (auto& th : pool) th.join();
  };
}

TokenizerData vocab_from_sentencepiece(const std::string& path) {
  sentencepiece::SentencePieceProcessor sp;
  const auto st = sp.Load(path);
  if (!st.ok()) throw Error(path, "cannot load the SentencePiece model: " + st.ToString());
  TokenizerData t;
  t.source = path;
  t.model = "llama";
  t.sp_model_path = path;
  for (int i = 0; i < sp.GetPieceSize(); ++i) {
    t.pieces.push_back(sp.IdToPiece(i));
    t.scores.push_back(sp.GetScore(i));
    // GGUF / SentencePiece token types: 1 normal, 2 unknown, 3 control, 5 unused, 6 byte.
    t.types.push_back(sp.IsUnknown(i) ? 2 : sp.IsControl(i) ? 3 : sp.IsByte(i) ? 6 : sp.IsUnused(i) ? 5 : 1);
  }
  t.bos_id = sp.bos_id();
  t.eos_id = sp.eos_id();
  t.unk_id = sp.unk_id();
  t.pad_id = sp.pad_id();
  return t;
}

// llama.cpp's llama_ftype for a file whose matrices are all `dt`.
uint32_t gguf_file_type(DType dt) {
  switch (dt) {
    case DType::F32: return 0;    // LLAMA_FTYPE_ALL_F32
    case DType::F16: return 1;    // MOSTLY_F16
    case DType::Q4_0: return 2;   // MOSTLY_Q4_0
    case DType::Q8_0: return 7;   // MOSTLY_Q8_0
    case DType::BF16: return 32;  // MOSTLY_BF16
    case DType::Q4_1: return 3;   // MOSTLY_Q4_1
    default: return 0;            // llmwb's own types have no llama_ftype: "all F32" is the neutral value
  }
}

void write_gguf(const ModelMakerOptions& o, const TokenizerData& vocab, const std::vector<Planned>& plan) {
  const ModelConfig& c = o.config;
  GgufWriter w;
  w.set_str("general.architecture", "llama");
  w.set_str("general.name", c.name);
  w.set_u32("general.file_type", gguf_file_type(o.dtype));
  if (o.dtype == DType::Q8_0 || o.dtype == DType::Q4_0) w.set_u32("general.quantization_version", 2);
  set_llama_gguf_metadata(w, c, vocab, o.out);
  for (const auto& t : plan) {
    // As llama.cpp's quantizer does, 1-D norm weights stay F32 whatever the matrices are.
    const DType dt = t.shape.size() == 1 ? DType::F32 : o.dtype;
    Planned g = t;
    g.rope_heads = 0;   // GGUF keeps the canonical (interleaved) row order
    w.add_tensor(t.canon, dt, t.shape, filler(o.seed, g, dt));
  }
  w.write(o.out);
}

const char* torch_dtype(DType dt) {
  return dt == DType::F16 ? "float16" : dt == DType::BF16 ? "bfloat16" : "float32";
}

// Every byte checked, the close included (a full disk often shows only there).
void write_whole_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw Error(path, std::string("cannot create: ") + std::strerror(errno));
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (f.fail()) throw Error(path, std::string("cannot write: ") + std::strerror(errno));
}

std::vector<std::string> write_folder(const ModelMakerOptions& o, const TokenizerData& vocab,
                                      const std::vector<Planned>& plan) {
  const ModelConfig& c = o.config;
  const fs::path dir(o.out);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir)) throw Error(o.out, "cannot create the folder" + (ec ? ": " + ec.message() : ""));
  std::vector<std::string> files;
  // Weights of an earlier make-model into the same folder (say, sharded differently) would
  // otherwise stay, and a stale index.json would win over the new model.safetensors.
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n == "model.safetensors" || n == "model.safetensors.index.json" ||
        (n.starts_with("model-") && n.ends_with(".safetensors") && n.find("-of-") != std::string::npos))
      fs::remove(e.path());
  }

  nlohmann::ordered_json cfg = {
      {"architectures", {"LlamaForCausalLM"}},
      {"model_type", "llama"},
      {"hidden_size", c.dim},
      {"intermediate_size", c.hidden_dim},
      {"num_attention_heads", c.n_heads},
      {"num_key_value_heads", c.n_kv_heads},
      {"num_hidden_layers", c.n_layers},
      {"head_dim", c.head_dim},
      {"vocab_size", c.vocab_size},
      {"max_position_embeddings", c.max_seq_len},
      {"rms_norm_eps", c.norm_eps},
      {"rope_theta", c.rope_theta},
      {"hidden_act", "silu"},
      {"tie_word_embeddings", c.tied_embeddings},
      {"bos_token_id", vocab.bos_id},
      {"eos_token_id", vocab.eos_id},
      {"torch_dtype", torch_dtype(o.dtype)},
      {"_name_or_path", c.name},
  };
  if (c.rope_scaling.type != "none") {
    nlohmann::ordered_json rs = {{"rope_type", c.rope_scaling.type}, {"factor", c.rope_scaling.factor}};
    if (c.rope_scaling.type == "llama3") {
      rs["low_freq_factor"] = c.rope_scaling.low_freq_factor;
      rs["high_freq_factor"] = c.rope_scaling.high_freq_factor;
      rs["original_max_position_embeddings"] = c.rope_scaling.original_max_position;
    }
    cfg["rope_scaling"] = rs;
  }
  const std::string cfg_path = (dir / "config.json").string();
  write_whole_file(cfg_path, cfg.dump(2) + "\n");
  files.push_back(cfg_path);

  // Greedy sharding in tensor order, as transformers' save_pretrained does; a tensor larger
  // than the limit gets a shard of its own.
  std::vector<std::vector<const Planned*>> shards(1);
  uint64_t in_shard = 0, total = 0;
  const uint64_t elem = static_cast<uint64_t>(dtype_info(o.dtype).block_bytes);
  for (const auto& t : plan) {
    const uint64_t b = numel(t.shape) * elem;
    if (in_shard > 0 && in_shard + b > o.shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(&t);
    in_shard += b;
    total += b;
  }
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  for (size_t s = 0; s < shards.size(); ++s) {
    char name[64];
    if (shards.size() == 1)
      std::snprintf(name, sizeof name, "model.safetensors");
    else
      std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", s + 1, shards.size());
    SafetensorsWriter w;
    w.set_metadata("format", "pt");
    for (const Planned* t : shards[s]) {
      w.add_tensor(t->hf, o.dtype, t->shape, filler(o.seed, *t, o.dtype));
      weight_map[t->hf] = name;
    }
    const std::string path = (dir / name).string();
    w.write(path);
    files.push_back(path);
  }
  if (shards.size() > 1) {
    const nlohmann::ordered_json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
    const std::string path = (dir / "model.safetensors.index.json").string();
    write_whole_file(path, index.dump(2) + "\n");
    files.push_back(path);
  }

  const fs::path tok = dir / "tokenizer.model";
  if (!o.tokenizer_path.empty()) {
    // Copied by content: copy_file would also copy a read-only source's permissions and make
    // the next make-model into the same folder fail.
    std::ifstream in(o.tokenizer_path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in && !in.eof()) throw Error(o.tokenizer_path, std::string("cannot read: ") + std::strerror(errno));
    write_whole_file(tok.string(), bytes);
  } else {
    write_whole_file(tok.string(), sentencepiece_model_bytes(vocab));
  }
  files.push_back(tok.string());
  return files;
}

}  // namespace

void random_weight_row(uint64_t seed, const std::string& name, int64_t row, int64_t cols, float* out) {
  uint64_t s = seed ^ fnv1a(name);
  s ^= splitmix64(&s) + static_cast<uint64_t>(row) * 0xD1B54A32D192ED03ull;
  const float base = is_norm(name) ? 1.0f : 0.0f;
  constexpr float kTwoPi = 6.2831853f, kStd = 0.02f;
  for (int64_t i = 0; i < cols; i += 2) {
    // Box-Muller in float: one 64-bit draw gives two 24-bit uniforms, u1 in (0, 1] (so the
    // log is finite) and u2 in [0, 1), and they give two independent normals. Float precision
    // is ample for weights that are stored in 16 bits or fewer anyway, and keeps a 7B model's
    // 6.7e9 values cheap to produce.
    const uint64_t x = splitmix64(&s);
    const float u1 = static_cast<float>((x >> 40) + 1) * 0x1.0p-24f;
    const float u2 = static_cast<float>((x >> 8) & 0xFFFFFF) * 0x1.0p-24f;
    const float r = kStd * std::sqrt(-2.0f * std::log(u1));
    out[i] = base + r * std::cos(kTwoPi * u2);
    if (i + 1 < cols) out[i + 1] = base + r * std::sin(kTwoPi * u2);
  }
}

uint64_t model_param_count(const ModelConfig& c) {
  uint64_t n = 0;
  for (const auto& t : plan_tensors(c)) n += numel(t.shape);
  return n;
}

const std::vector<std::string>& model_preset_names() {
  static const std::vector<std::string> n = {"tinyllama-1.1b", "llama2-7b", "llama-110m", "stories15m"};
  return n;
}

bool model_preset(const std::string& name, ModelConfig* out) {
  struct P {
    const char* name;
    int dim, ffn, layers, heads, kv, vocab, ctx;
    bool tied;   // llama2.c's models share the classifier with the embedding
  };
  static const P kPresets[] = {
      {"tinyllama-1.1b", 2048, 5632, 22, 32, 4, 32000, 2048, false},
      {"llama2-7b", 4096, 11008, 32, 32, 32, 32000, 4096, false},
      {"llama-110m", 768, 2048, 12, 12, 12, 32000, 1024, true},
      {"stories15m", 288, 768, 6, 6, 6, 32000, 256, true},
  };
  for (const P& p : kPresets) {
    if (name != p.name) continue;
    ModelConfig c;
    c.name = p.name;
    c.dim = p.dim;
    c.hidden_dim = p.ffn;
    c.n_layers = p.layers;
    c.n_heads = p.heads;
    c.n_kv_heads = p.kv;
    c.head_dim = p.dim / p.heads;
    c.vocab_size = p.vocab;
    c.max_seq_len = p.ctx;
    c.rope_theta = 10000.0f;
    c.norm_eps = 1e-5f;
    c.tied_embeddings = p.tied;
    *out = c;
    return true;
  }
  return false;
}

MadeModel make_model(const ModelMakerOptions& opt) {
  ModelMakerOptions o = opt;
  ModelConfig& c = o.config;
  if (c.head_dim == 0 && c.n_heads > 0) c.head_dim = c.dim / c.n_heads;
  if (c.name.empty()) c.name = "random-llama";
  c.validate("model shape");
  if (o.format != "gguf" && o.format != "safetensors")
    throw Error("format", "'" + o.format + "' is not an output format (gguf, safetensors)");
  if (o.out.empty()) throw Error("out", "no output path");
  const bool quant = o.dtype == DType::Q8_0 || o.dtype == DType::Q4_0;
  if (o.format == "safetensors" && quant)
    throw Error("dtype", std::string(dtype_name(o.dtype)) + " is GGUF-only: safetensors holds F32, F16 or BF16");
  if (quant) {
    const int block = dtype_info(o.dtype).block_elems;
    for (auto [what, n] : {std::pair{"dim", c.dim}, {"ffn", c.hidden_dim}, {"heads * head_dim", c.n_heads * c.head_dim}})
      if (n % block != 0)
        throw Error("dtype", std::string(dtype_name(o.dtype)) + " packs rows in blocks of " + std::to_string(block) +
                                 ", but " + what + " is " + std::to_string(n));
  }
  if (o.shard_bytes == 0) throw Error("shard size", "must be positive");

  TokenizerData vocab = o.tokenizer_path.empty() ? make_synthetic_vocab(c.vocab_size)
                                                 : vocab_from_sentencepiece(o.tokenizer_path);
  if (static_cast<int>(vocab.pieces.size()) != c.vocab_size)
    throw Error(o.tokenizer_path, "has " + std::to_string(vocab.pieces.size()) + " pieces, the model's vocabulary is " +
                                      std::to_string(c.vocab_size));
  if (vocab.bos_id >= 0) c.bos_id = vocab.bos_id;
  if (vocab.eos_id >= 0) c.eos_id = vocab.eos_id;

  const std::vector<Planned> plan = plan_tensors(c);
  MadeModel made;
  if (o.format == "gguf") {
    if (const fs::path parent = fs::path(o.out).parent_path(); !parent.empty()) fs::create_directories(parent);
    write_gguf(o, vocab, plan);
    made.files = {o.out};
  } else {
    made.files = write_folder(o, vocab, plan);
  }
  for (const auto& f : made.files) made.bytes += fs::file_size(f);
  made.n_params = model_param_count(c);
  return made;
}

}  // namespace llmwb
