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
#include "format/tokenizer_json.h"

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
bool is_qk_norm(const std::string& name) {
  return name.find("attn_q_norm") != std::string::npos || name.find("attn_k_norm") != std::string::npos;
}
bool is_bias(const std::string& name) { return name.ends_with(".bias"); }

struct Planned {
  std::string canon;              // GGUF name
  std::string hf;                 // Hugging Face name
  std::vector<int64_t> shape;
  int rope_heads = 0;             // > 0: q/k, rows permuted to rotate-half in the HF folder
};

// q/k rows (and their biases and norm gains) are generated in the order the architecture's GGUF
// stores them; a Llama's HF folder holds them permuted to rotate-half, a Qwen's as they are.
std::vector<Planned> plan_tensors(const ModelConfig& c) {
  const int64_t d = c.dim, h = c.hidden_dim, hd = c.head_dim, q = c.n_heads * hd, kv = c.n_kv_heads * hd;
  const Architecture* arch = find_architecture(c.architecture);
  const bool permute = !arch || arch->gguf_rope_layout == RopeLayout::Interleaved;
  const int q_heads = permute ? c.n_heads : 0, k_heads = permute ? c.n_kv_heads : 0;
  std::vector<Planned> p = {{"token_embd.weight", "model.embed_tokens.weight", {c.vocab_size, d}, 0}};
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string g = "blk." + std::to_string(l) + ".", f = "model.layers." + std::to_string(l) + ".";
    p.push_back({g + "attn_norm.weight", f + "input_layernorm.weight", {d}, 0});
    p.push_back({g + "attn_q.weight", f + "self_attn.q_proj.weight", {q, d}, q_heads});
    p.push_back({g + "attn_k.weight", f + "self_attn.k_proj.weight", {kv, d}, k_heads});
    p.push_back({g + "attn_v.weight", f + "self_attn.v_proj.weight", {kv, d}, 0});
    if (c.attn_qkv_bias) {
      p.push_back({g + "attn_q.bias", f + "self_attn.q_proj.bias", {q}, q_heads});
      p.push_back({g + "attn_k.bias", f + "self_attn.k_proj.bias", {kv}, k_heads});
      p.push_back({g + "attn_v.bias", f + "self_attn.v_proj.bias", {kv}, 0});
    }
    if (c.attn_qk_norm) {
      p.push_back({g + "attn_q_norm.weight", f + "self_attn.q_norm.weight", {hd}, permute ? 1 : 0});
      p.push_back({g + "attn_k_norm.weight", f + "self_attn.k_norm.weight", {hd}, permute ? 1 : 0});
    }
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
    if (t.shape.size() == 1 && t.rope_heads > 0) {   // a q/k bias or norm gain: its elements are the "rows"
      const int64_t ehd = cols / t.rope_heads;
      std::vector<float> canon(static_cast<size_t>(cols)), row(canon.size());
      random_weight_row(seed, t.canon, 0, cols, canon.data());
      for (int64_t r = 0; r < cols; ++r) {
        const int64_t h = r / ehd, i = r % ehd;
        row[static_cast<size_t>(r)] = canon[static_cast<size_t>(h * ehd + (i < ehd / 2 ? 2 * i : 2 * (i - ehd / 2) + 1))];
      }
      quantize_row(dt, row.data(), dst, cols);
      return;
    }
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
  w.set_str("general.architecture", c.architecture);
  w.set_str("general.name", c.name);
  w.set_u32("general.file_type", gguf_file_type(o.dtype));
  if (o.dtype == DType::Q8_0 || o.dtype == DType::Q4_0) w.set_u32("general.quantization_version", 2);
  set_llama_gguf_metadata(w, c, vocab, o.out);
  if (const std::vector<float> f = gguf_rope_freqs(c); !f.empty())
    w.add_tensor("rope_freqs.weight", DType::F32, {static_cast<int64_t>(f.size())},
                 [f](uint8_t* dst) { std::memcpy(dst, f.data(), sizeof(float) * f.size()); });
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

  // transformers' class and model_type for the architecture.
  const char* hf_class = c.architecture == "qwen2"   ? "Qwen2ForCausalLM"
                         : c.architecture == "qwen3" ? "Qwen3ForCausalLM"
                         : c.architecture == "mistral" ? "MistralForCausalLM"
                                                       : "LlamaForCausalLM";
  nlohmann::ordered_json cfg = {
      {"architectures", {hf_class}},
      {"model_type", c.architecture},
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
      {"torch_dtype", torch_dtype(o.dtype)},
      {"_name_or_path", c.name},
  };
  // A vocabulary without a BOS (Qwen's) leaves the key out: transformers' null.
  if (vocab.bos_id >= 0) cfg["bos_token_id"] = vocab.bos_id;
  if (vocab.eos_id >= 0) cfg["eos_token_id"] = vocab.eos_id;
  if (c.architecture == "qwen3") cfg["attention_bias"] = false;   // Qwen3Config's key; q/k norm is implied
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

  if (o.tokenizer_path.ends_with(".json")) {
    // A byte-level BPE: tokenizer.json and, when it has one, the tokenizer_config.json beside it.
    const fs::path src(o.tokenizer_path);
    for (const fs::path& from : {src, src.parent_path() / "tokenizer_config.json"}) {
      if (from != src && !fs::exists(from)) continue;
      const fs::path to = dir / (from == src ? fs::path("tokenizer.json") : from.filename());
      std::ifstream in(from, std::ios::binary);
      std::ofstream f(to, std::ios::binary | std::ios::trunc);
      f << in.rdbuf();
      if (!in || !f) throw Error(to.string(), "cannot copy " + from.string());
      files.push_back(to.string());
    }
    return files;
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
  // Q/K norm gains and biases spread wider than the matrices, so that a forward pass that
  // skipped or misplaced them would show in the logits.
  constexpr float kTwoPi = 6.2831853f;
  const float sd = is_qk_norm(name) ? 0.25f : is_bias(name) ? 0.5f : 0.02f;
  for (int64_t i = 0; i < cols; i += 2) {
    // Box-Muller in float: one 64-bit draw gives two 24-bit uniforms, u1 in (0, 1] (so the
    // log is finite) and u2 in [0, 1), and they give two independent normals. Float precision
    // is ample for weights that are stored in 16 bits or fewer anyway, and keeps a 7B model's
    // 6.7e9 values cheap to produce.
    const uint64_t x = splitmix64(&s);
    const float u1 = static_cast<float>((x >> 40) + 1) * 0x1.0p-24f;
    const float u2 = static_cast<float>((x >> 8) & 0xFFFFFF) * 0x1.0p-24f;
    const float r = sd * std::sqrt(-2.0f * std::log(u1));
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
  static const std::vector<std::string> n = {"tinyllama-1.1b", "llama2-7b",    "llama-110m", "stories15m",
                                             "llama3.2-1b",    "qwen2.5-0.5b", "qwen3-0.6b"};
  return n;
}

bool model_preset(const std::string& name, ModelConfig* out) {
  struct P {
    const char* name;
    const char* arch;
    int dim, ffn, layers, heads, kv, head_dim, vocab, ctx;
    float theta, eps;
    bool tied;   // llama2.c's models, Llama 3.2 1B/3B and the small Qwens share the head with the embedding
  };
  // The shapes of the published config.json files.
  static const P kPresets[] = {
      {"tinyllama-1.1b", "llama", 2048, 5632, 22, 32, 4, 64, 32000, 2048, 10000.0f, 1e-5f, false},
      {"llama2-7b", "llama", 4096, 11008, 32, 32, 32, 128, 32000, 4096, 10000.0f, 1e-5f, false},
      {"llama-110m", "llama", 768, 2048, 12, 12, 12, 64, 32000, 1024, 10000.0f, 1e-5f, true},
      {"stories15m", "llama", 288, 768, 6, 6, 6, 48, 32000, 256, 10000.0f, 1e-5f, true},
      {"llama3.2-1b", "llama", 2048, 8192, 16, 32, 8, 64, 128256, 131072, 500000.0f, 1e-5f, true},
      {"qwen2.5-0.5b", "qwen2", 896, 4864, 24, 14, 2, 64, 151936, 32768, 1000000.0f, 1e-6f, true},
      {"qwen3-0.6b", "qwen3", 1024, 3072, 28, 16, 8, 128, 151936, 40960, 1000000.0f, 1e-6f, true},
  };
  for (const P& p : kPresets) {
    if (name != p.name) continue;
    ModelConfig c;
    c.name = p.name;
    c.architecture = p.arch;
    c.dim = p.dim;
    c.hidden_dim = p.ffn;
    c.n_layers = p.layers;
    c.n_heads = p.heads;
    c.n_kv_heads = p.kv;
    c.head_dim = p.head_dim;
    c.vocab_size = p.vocab;
    c.max_seq_len = p.ctx;
    c.rope_theta = p.theta;
    c.norm_eps = p.eps;
    c.tied_embeddings = p.tied;
    const Architecture* a = find_architecture(p.arch);
    c.attn_qkv_bias = a->qkv_bias;
    c.attn_qk_norm = a->qk_norm;
    c.rope_layout = a->gguf_rope_layout;
    if (name == "llama3.2-1b") {   // Llama 3.1's long-context RoPE, as its config.json gives it
      c.rope_scaling.type = "llama3";
      c.rope_scaling.factor = 32.0f;
      c.rope_scaling.low_freq_factor = 1.0f;
      c.rope_scaling.high_freq_factor = 4.0f;
      c.rope_scaling.original_max_position = 8192;
    }
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
  // A file has no switch for the variants: its architecture implies them (qwen2: biases).
  const Architecture* arch = find_architecture(c.architecture);
  c.attn_qkv_bias = arch->qkv_bias;
  c.attn_qk_norm = arch->qk_norm;
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

  const bool bpe_json = o.tokenizer_path.ends_with(".json");
  TokenizerData vocab = o.tokenizer_path.empty() ? make_synthetic_vocab(c.vocab_size)
                        : bpe_json               ? read_tokenizer_json(o.tokenizer_path)
                                                 : vocab_from_sentencepiece(o.tokenizer_path);
  // A tokenizer.json may have fewer tokens than the embedding has rows (Qwen: 151,669 of
  // 151,936): GGUF gets the rest as [PAD<id>] pieces, as llama.cpp's converter writes them.
  if (bpe_json && static_cast<int>(vocab.pieces.size()) < c.vocab_size) pad_vocabulary(&vocab, static_cast<size_t>(c.vocab_size));
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
