// hf_loader.cpp — a Hugging Face Llama/Mistral/Qwen2/Qwen3 folder: config.json, model.safetensors (or
// shards listed in model.safetensors.index.json), tokenizer.model or tokenizer.json, tokenizer_config.json.
//
// Weights stay in the memory-mapped shards (each shard mapped once). Tensors are renamed to
// GGUF's canonical names (model_file.h). The q/k projections are NOT permuted back to the
// interleaved RoPE layout that llama.cpp's converter produces: HF stores them for
// "rotate_half" (transformers' LlamaRotaryEmbedding pairs x[i] with x[i + d/2]), so the model
// is marked RopeLayout::RotateHalf and the forward pass rotates accordingly.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "llmwb/errors.h"
#include "format/model_file.h"
#include "format/safetensors_file.h"
#include "format/tokenizer_json.h"
#include "format/model_file.h"
#include "format/safetensors_file.h"

namespace llmwb {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json read_json(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw Error(p.string(), std::string("cannot open: ") + std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  json j = json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw Error(p.string(), "invalid JSON");
  if (!j.is_object()) throw Error(p.string(), "is not a JSON object");
  return j;
}

// Typed reads of config.json keys; every problem names the file and the key.
class ConfigReader {
 public:
  ConfigReader(const json& j, std::string where) : j_(j), where_(std::move(where)) {}

  const json* get(const std::string& key) {
    used_.insert(key);
    auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  int positive_int(const std::string& key, std::optional<int> def = std::nullopt) {
    const json* v = get(key);
    if (!v) {
      if (def) return *def;
      throw Error(where_, "missing key '" + key + "'");
    }
    if (!v->is_number_integer() || v->get<int64_t>() <= 0 || v->get<int64_t>() > INT32_MAX)
      throw Error(where_, "key '" + key + "': expected a positive integer, got " + v->dump());
    return v->get<int>();
  }
  float number(const std::string& key, float def) {
    const json* v = get(key);
    if (!v) return def;
    if (!v->is_number()) throw Error(where_, "key '" + key + "': expected a number, got " + v->dump());
    return v->get<float>();
  }
  bool boolean(const std::string& key, bool def) {
    const json* v = get(key);
    if (!v) return def;
    if (!v->is_boolean()) throw Error(where_, "key '" + key + "': expected true or false, got " + v->dump());
    return v->get<bool>();
  }
  // bos/eos ids: an integer, or (Llama 3 style) a list whose first entry is used.
  int token_id(const std::string& key, int def) {
    const json* v = get(key);
    if (!v) return def;
    const json* x = v->is_array() && !v->empty() ? &(*v)[0] : v;
    if (!x->is_number_integer() || x->get<int64_t>() < 0 || x->get<int64_t>() > INT32_MAX)
      throw Error(where_, "key '" + key + "': expected a token id, got " + v->dump());
    return x->get<int>();
  }
  // Keys no typed read consumed, for ModelFile::metadata.
  void unused_into(std::map<std::string, std::string>* out) const {
    for (auto it = j_.begin(); it != j_.end(); ++it)
      if (!used_.count(it.key())) (*out)[it.key()] = it->is_string() ? it->get<std::string>() : it->dump();
  }

 private:
  const json& j_;
  std::string where_;
  std::set<std::string> used_;
};

RopeScaling read_rope_scaling(ConfigReader& r, const std::string& where) {
  RopeScaling s;
  const json* v = r.get("rope_scaling");
  if (!v) return s;
  if (!v->is_object()) throw Error(where, "key 'rope_scaling': expected an object, got " + v->dump());
  std::string type;
  for (const char* k : {"rope_type", "type"})
    if (v->contains(k) && (*v)[k].is_string()) type = (*v)[k].get<std::string>();
  if (type.empty() || type == "default") return s;
  if (type != "linear" && type != "llama3")
    throw Error(where, "key 'rope_scaling': type '" + type + "' is not supported (linear and llama3 are)");
  s.type = type;
  auto num = [&](const char* k, float def) {
    if (!v->contains(k)) return def;
    if (!(*v)[k].is_number()) throw Error(where, std::string("key 'rope_scaling.") + k + "': expected a number");
    return (*v)[k].get<float>();
  };
  s.factor = num("factor", 1.0f);
  s.low_freq_factor = num("low_freq_factor", s.low_freq_factor);
  s.high_freq_factor = num("high_freq_factor", s.high_freq_factor);
  s.original_max_position = static_cast<int>(num("original_max_position_embeddings",
                                                 static_cast<float>(s.original_max_position)));
  if (s.factor <= 0) throw Error(where, "key 'rope_scaling.factor': must be positive");
  return s;
}

ModelConfig read_config(const json& j, const std::string& where, std::map<std::string, std::string>* metadata) {
  ConfigReader r(j, where);
  ModelConfig c;
  const json* mt = r.get("model_type");
  if (!mt) throw Error(where, "missing key 'model_type'");
  const std::string model_type = mt->is_string() ? mt->get<std::string>() : mt->dump();
  // transformers' model_type names the same graphs as GGUF's general.architecture.
  const Architecture* arch = find_architecture(model_type);
  if (!arch)
    throw Error(where, "key 'model_type': '" + model_type + "' is not supported (" + supported_architectures() + ")");
  c.architecture = model_type == "mistral" ? "llama" : model_type;   // Mistral is the Llama graph (sliding window aside)
  // Qwen2Attention always has q/k/v biases (its config has no switch); Qwen3Attention always
  // normalizes q and k per head. attention_bias (Llama, Qwen3) would also bias o_proj, and
  // mlp_bias the FFN: neither has a place in this graph.
  c.attn_qkv_bias = arch->qkv_bias;
  c.attn_qk_norm = arch->qk_norm;
  for (const char* k : {"attention_bias", "mlp_bias"})
    if (r.boolean(k, false))
      throw Error(where, std::string("key '") + k + "': true is not supported (" +
                             (std::string(k) == "mlp_bias" ? "FFN biases" : "an output-projection bias") + ")");
  if (r.boolean("use_sliding_window", false))   // Qwen2's switch (off in every released config)
    throw Error(where, "key 'use_sliding_window': true is not supported (sliding-window attention)");
  c.dim = r.positive_int("hidden_size");
  c.hidden_dim = r.positive_int("intermediate_size");
  c.n_heads = r.positive_int("num_attention_heads");
  c.n_kv_heads = r.positive_int("num_key_value_heads", c.n_heads);
  c.n_layers = r.positive_int("num_hidden_layers");
  c.vocab_size = r.positive_int("vocab_size");
  c.max_seq_len = r.positive_int("max_position_embeddings");
  c.head_dim = r.positive_int("head_dim", c.dim / c.n_heads);
  c.norm_eps = r.number("rms_norm_eps", 1e-6f);   // transformers' LlamaConfig default
  c.rope_theta = r.number("rope_theta", 10000.0f);
  c.rope_scaling = read_rope_scaling(r, where);
  c.tied_embeddings = r.boolean("tie_word_embeddings", false);
  c.bos_id = r.token_id("bos_token_id", 1);
  c.eos_id = r.token_id("eos_token_id", 2);
  c.rope_layout = RopeLayout::RotateHalf;
  if (const json* n = r.get("_name_or_path"); n && n->is_string()) c.name = n->get<std::string>();
  r.get("architectures");   // shown via model_type
  metadata->emplace("model_type", model_type);
  r.unused_into(metadata);
  return c;
}

// HF name -> canonical GGUF name; "" for names we do not know.
std::string canonical_name(const std::string& hf, int n_layers, const std::string& where) {
  static const std::map<std::string, std::string> kTop = {
      {"model.embed_tokens.weight", "token_embd.weight"},
      {"model.norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"},
  };
  static const std::map<std::string, std::string> kLayer = {
      {"self_attn.q_proj.weight", "attn_q.weight"},     {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},     {"self_attn.o_proj.weight", "attn_output.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},      {"input_layernorm.weight", "attn_norm.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},         {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.bias", "attn_v.bias"},         {"self_attn.q_norm.weight", "attn_q_norm.weight"},
      {"self_attn.k_norm.weight", "attn_k_norm.weight"},
  };
  if (auto it = kTop.find(hf); it != kTop.end()) return it->second;
  const std::string prefix = "model.layers.";
  if (hf.compare(0, prefix.size(), prefix) != 0) return "";
  size_t p = prefix.size(), q = p;
  while (q < hf.size() && q - p < 9 && std::isdigit(static_cast<unsigned char>(hf[q]))) ++q;
  if (q == p || q >= hf.size() || hf[q] != '.') return "";
  auto it = kLayer.find(hf.substr(q + 1));
  if (it == kLayer.end()) return "";
  const int layer = std::stoi(hf.substr(p, q - p));
  if (layer >= n_layers)
    throw Error(where, "tensor '" + hf + "': layer " + std::to_string(layer) + " but num_hidden_layers is " +
                           std::to_string(n_layers));
  return "blk." + std::to_string(layer) + "." + it->second;
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// Every tensor the Llama graph needs, with the shape config.json implies.
std::vector<std::pair<std::string, std::vector<int64_t>>> expected_tensors(const ModelConfig& c) {
  const int64_t d = c.dim, h = c.hidden_dim, q = int64_t{c.n_heads} * c.head_dim, kv = int64_t{c.n_kv_heads} * c.head_dim;
  std::vector<std::pair<std::string, std::vector<int64_t>>> e = {{"model.embed_tokens.weight", {c.vocab_size, d}}};
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    e.push_back({p + "input_layernorm.weight", {d}});
    e.push_back({p + "self_attn.q_proj.weight", {q, d}});
    e.push_back({p + "self_attn.k_proj.weight", {kv, d}});
    e.push_back({p + "self_attn.v_proj.weight", {kv, d}});
    if (c.attn_qkv_bias) {
      e.push_back({p + "self_attn.q_proj.bias", {q}});
      e.push_back({p + "self_attn.k_proj.bias", {kv}});
      e.push_back({p + "self_attn.v_proj.bias", {kv}});
    }
    if (c.attn_qk_norm) {
      e.push_back({p + "self_attn.q_norm.weight", {c.head_dim}});
      e.push_back({p + "self_attn.k_norm.weight", {c.head_dim}});
    }
    e.push_back({p + "self_attn.o_proj.weight", {d, q}});
    e.push_back({p + "post_attention_layernorm.weight", {d}});
    e.push_back({p + "mlp.gate_proj.weight", {h, d}});
    e.push_back({p + "mlp.up_proj.weight", {h, d}});
    e.push_back({p + "mlp.down_proj.weight", {d, h}});
  }
  e.push_back({"model.norm.weight", {d}});
  if (!c.tied_embeddings) e.push_back({"lm_head.weight", {c.vocab_size, d}});
  return e;
}

// A stored tensor and the file it came from (for messages).
struct Found {
  TensorView view;
  std::string file;
};

// model.safetensors, or the shards of model.safetensors.index.json. `weights_where` is the
// file a missing tensor is reported against.
std::vector<Found> map_weights(ModelFile* m, const fs::path& dir, std::string* weights_where) {
  const fs::path single = dir / "model.safetensors";
  const fs::path index = dir / "model.safetensors.index.json";
  std::vector<std::pair<std::string, std::vector<std::string>>> shards;   // file -> names it must hold
  if (fs::exists(index)) {
    *weights_where = index.string();
    const json j = read_json(index);
    if (!j.contains("weight_map") || !j["weight_map"].is_object())
      throw Error(index.string(), "missing key 'weight_map'");
    std::map<std::string, size_t> slot;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it->is_string()) throw Error(index.string(), "weight_map['" + it.key() + "'] is not a file name");
      const std::string f = it->get<std::string>();
      // Shards live in the folder: a name with a path in it could read any file on the disk.
      if (f.empty() || f.find('/') != std::string::npos || f.find('\\') != std::string::npos || f == "." || f == "..")
        throw Error(index.string(), "weight_map['" + it.key() + "']: shard '" + f + "' is not a file in the folder");
      auto [s, added] = slot.emplace(f, shards.size());
      if (added) shards.push_back({f, {}});
      shards[s->second].second.push_back(it.key());
    }
    std::sort(shards.begin(), shards.end());
  } else if (fs::exists(single)) {
    *weights_where = single.string();
    shards.push_back({"model.safetensors", {}});
  } else {
    const bool bin = fs::exists(dir / "pytorch_model.bin") || fs::exists(dir / "pytorch_model.bin.index.json");
    throw Error(dir.string(), std::string("no model.safetensors or model.safetensors.index.json") +
                                  (bin ? " (PyTorch .bin weights are not supported: convert them to safetensors)" : ""));
  }

  std::vector<Found> out;
  for (const auto& [file, names] : shards) {
    const std::string path = (dir / file).string();
    if (!fs::exists(path)) throw Error(*weights_where, "shard '" + file + "' does not exist");
    auto map = std::make_shared<MappedFile>(path);
    SafetensorsFile st = SafetensorsFile::parse(map->data(), map->size(), path);
    for (const auto& [k, v] : st.metadata) m->metadata["safetensors." + k] = v;
    if (names.empty()) {
      for (const auto& t : st.tensors) out.push_back({t, path});
    } else {
      std::set<std::string> wanted(names.begin(), names.end());
      for (const auto& n : names)
        if (!st.find(n)) throw Error(path, "missing tensor '" + n + "' (listed for this shard in " + index.filename().string() + ")");
      // Keep data-section order; tensors the index does not list for this shard are ignored,
      // as transformers ignores them.
      for (const auto& t : st.tensors)
        if (wanted.count(t.name)) out.push_back({t, path});
    }
    m->maps.push_back(std::move(map));
  }
  return out;
}

void read_tokenizer(ModelFile* m, const fs::path& dir) {
  TokenizerData& t = m->tokenizer;
  const fs::path tc = dir / "tokenizer_config.json";
  // A SentencePiece tokenizer.model wins: Llama 2 folders carry both it and a tokenizer.json
  // that only restates it. Otherwise a byte-level BPE tokenizer.json (Llama 3, Qwen2/3),
  // padded to the embedding's rows as llama.cpp's converter pads it.
  if (!fs::exists(dir / "tokenizer.model") && fs::exists(dir / "tokenizer.json")) {
    t = read_tokenizer_json((dir / "tokenizer.json").string());
    if (m->config.vocab_size > 0) pad_vocabulary(&t, static_cast<size_t>(m->config.vocab_size));
    return;
  }
  t.model = "llama";
  t.bos_id = m->config.bos_id;
  t.eos_id = m->config.eos_id;
  if (fs::exists(dir / "tokenizer.model")) {
    t.sp_model_path = (dir / "tokenizer.model").string();
    t.source = t.sp_model_path;
  }
  if (fs::exists(tc)) read_tokenizer_config(tc.string(), &t, /*with_special_tokens=*/false);
}

}  // namespace

std::unique_ptr<ModelFile> load_hf_folder(const std::string& dir_str) {
  const fs::path dir(dir_str);
  if (!fs::is_directory(dir)) throw Error(dir_str, "is not a folder");
  const fs::path cfg_path = dir / "config.json";
  if (!fs::exists(cfg_path)) throw Error(dir_str, "no config.json (a Hugging Face model folder needs one)");

  auto m = std::make_unique<ModelFile>();
  m->path = dir_str;
  m->format = "safetensors";
  m->config = read_config(read_json(cfg_path), cfg_path.string(), &m->metadata);
  ModelConfig& c = m->config;
  if (c.name.empty()) c.name = fs::absolute(dir).lexically_normal().filename().string();
  if (c.name.empty()) c.name = fs::absolute(dir).lexically_normal().parent_path().filename().string();
  c.validate(cfg_path.string());

  std::string weights_where;
  std::vector<Found> found = map_weights(m.get(), dir, &weights_where);

  std::map<std::string, const Found*> by_name;
  for (const auto& f : found) by_name[f.view.name] = &f;
  for (const auto& [name, shape] : expected_tensors(c)) {
    auto it = by_name.find(name);
    if (it == by_name.end())
      throw Error(weights_where, "missing tensor '" + name + "' (" + canonical_name(name, c.n_layers, weights_where) + ")");
    if (it->second->view.shape != shape)
      throw Error(it->second->file, "tensor '" + name + "' has shape " + shape_str(it->second->view.shape) +
                                        " but config.json implies " + shape_str(shape));
  }

  for (const auto& f : found) {
    if (f.view.name.ends_with(".rotary_emb.inv_freq")) continue;   // a buffer old checkpoints saved
    if (c.tied_embeddings && f.view.name == "lm_head.weight") continue;   // tied: the embedding is the head
    TensorView v = f.view;
    const std::string canon = canonical_name(v.name, c.n_layers, f.file);
    if (!canon.empty()) v.name = canon;   // unknown tensors keep their stored name
    // Safetensors aligns the data section, not each tensor; the kernels read floats in place,
    // so a tensor behind an odd-sized one is copied once into an aligned buffer.
    const uint64_t align = static_cast<uint64_t>(dtype_info(v.dtype).block_bytes);
    if (reinterpret_cast<uintptr_t>(v.data) % align != 0) {
      m->owned.emplace_back(v.data, v.data + v.nbytes);
      v.data = m->owned.back().data();
    }
    m->tensors.push_back(std::move(v));
  }
  read_tokenizer(m.get(), dir);
  return m;
}

}  // namespace llmwb
