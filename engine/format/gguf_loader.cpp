// gguf_loader.cpp — load_gguf: a GGUF file (as llama.cpp writes it) mapped and turned into a
// ModelFile. Metadata keys follow llama.cpp's names (gguf-py/gguf/constants.py): the model
// keys are "<arch>.embedding_length" etc., the vocabulary is "tokenizer.ggml.*".
#include <climits>
#include <memory>

#include "llmwb/errors.h"
#include "format/gguf_file.h"
#include "format/model_file.h"
#include "format/pre_tokenizer_preset.h"
#include "format/gguf_file.h"
#include "format/model_file.h"

namespace llmwb {

namespace {

// Reads typed metadata for the loader, with errors that name the file and the key.
class Metadata {
 public:
  Metadata(const GgufFile& g, const std::string& path) : g_(g), path_(path) {}

  const GgufValue* find(const std::string& key) const { return g_.find(key); }

  const GgufValue& require(const std::string& key) const {
    const GgufValue* v = g_.find(key);
    if (!v) throw Error(path_, "missing required metadata key '" + key + "'");
    return *v;
  }

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw Error(path_, "key '" + key + "' " + what);
  }

  int64_t integer(const std::string& key, const GgufValue& v) const {
    if (!gguf_type_is_integer(v.type) || v.type == GgufType::BOOL) {
      fail(key, "has type " + gguf_value_type_name(v.type) + ", expected an integer");
    }
    if (v.type == GgufType::U64 && v.as_u64() > static_cast<uint64_t>(INT64_MAX)) {
      fail(key, "= " + v.to_string() + " is out of range");
    }
    return v.as_i64();
  }

  // A positive count or size that fits an int.
  int positive(const std::string& key, const GgufValue& v) const {
    const int64_t x = integer(key, v);
    if (x <= 0 || x > INT_MAX) fail(key, "= " + std::to_string(x) + " must be a positive int");
    return static_cast<int>(x);
  }
  int positive(const std::string& key) const { return positive(key, require(key)); }
  int positive_or(const std::string& key, int fallback) const {
    const GgufValue* v = find(key);
    return v ? positive(key, *v) : fallback;
  }

  float number_or(const std::string& key, float fallback) const {
    const GgufValue* v = find(key);
    if (!v) return fallback;
    if (v->type == GgufType::F32 || v->type == GgufType::F64) return static_cast<float>(v->f);
    return static_cast<float>(integer(key, *v));
  }

  std::string string(const std::string& key, const GgufValue& v) const {
    if (v.type != GgufType::STRING) {
      fail(key, "has type " + gguf_value_type_name(v.type) + ", expected a string");
    }
    return v.str;
  }
  std::string string_or(const std::string& key, const std::string& fallback) const {
    const GgufValue* v = find(key);
    return v ? string(key, *v) : fallback;
  }

  bool boolean_or(const std::string& key, bool fallback) const {
    const GgufValue* v = find(key);
    if (!v) return fallback;
    if (v->type != GgufType::BOOL) fail(key, "has type " + gguf_value_type_name(v->type) + ", expected bool");
    return v->bits != 0;
  }

  // An array of `elem` (for integers: any integer type) or nullptr when the key is absent.
  const GgufValue* array_or_null(const std::string& key, GgufType elem) const {
    const GgufValue* v = find(key);
    if (!v) return nullptr;
    const bool ok = v->type == GgufType::ARRAY &&
                    (v->elem_type == elem ||
                     (elem == GgufType::I32 && gguf_type_is_integer(v->elem_type) &&
                      v->elem_type != GgufType::BOOL));
    if (!ok) {
      fail(key, "has type " + gguf_value_type_name(v->type) +
                    (v->type == GgufType::ARRAY ? " of " + gguf_value_type_name(v->elem_type) : "") +
                    ", expected an array of " + gguf_value_type_name(elem));
    }
    return v;
  }

  // Token ids: llama.cpp writes "no such token" as u32 0xFFFFFFFF (LLAMA_TOKEN_NULL = -1).
  int token_id_or(const std::string& key, int fallback, size_t n_tokens) const {
    const GgufValue* v = find(key);
    if (!v) return fallback;
    int64_t id = integer(key, *v);
    if (v->type == GgufType::U32 && id == 0xFFFFFFFF) id = -1;
    if (id < -1 || (n_tokens > 0 && id >= static_cast<int64_t>(n_tokens))) {
      fail(key, "= " + std::to_string(id) + " is not a token id (the vocabulary has " +
                    std::to_string(n_tokens) + " tokens)");
    }
    return static_cast<int>(id);
  }

 private:
  const GgufFile& g_;
  const std::string& path_;
};

void read_config(const Metadata& m, const std::string& arch, ModelConfig* c) {
  const std::string p = arch + ".";
  c->architecture = arch;
  c->name = m.string_or("general.name", "");
  c->max_seq_len = m.positive(p + "context_length");
  c->dim = m.positive(p + "embedding_length");
  c->n_layers = m.positive(p + "block_count");
  c->hidden_dim = m.positive(p + "feed_forward_length");
  c->n_heads = m.positive(p + "attention.head_count");
  c->n_kv_heads = m.positive_or(p + "attention.head_count_kv", c->n_heads);
  // Qwen3 and Llama-3-style files may give a head size other than dim / heads.
  c->head_dim = m.positive_or(p + "attention.key_length",
                              m.positive_or(p + "rope.dimension_count", c->dim / c->n_heads));
  if (m.positive_or(p + "attention.value_length", c->head_dim) != c->head_dim)
    m.fail(p + "attention.value_length", "= " + std::to_string(m.positive(p + "attention.value_length")) +
                                             " differs from the key length " + std::to_string(c->head_dim) +
                                             " (llmwb needs one head size for K and V)");
  if (m.positive_or(p + "rope.dimension_count", c->head_dim) != c->head_dim)
    m.fail(p + "rope.dimension_count", "= " + std::to_string(m.positive(p + "rope.dimension_count")) +
                                           " rotates part of a head of " + std::to_string(c->head_dim) +
                                           " (partial RoPE is not supported)");
  c->rope_theta = m.number_or(p + "rope.freq_base", 10000.0f);
  c->norm_eps = m.number_or(p + "attention.layer_norm_rms_epsilon", 1e-5f);
  // llama.cpp's converter permutes a Llama's Hugging Face rotate-half q/k rows back to Meta's
  // interleaved pairs; Qwen's it keeps as they are (llama.cpp rotates them NEOX-style).
  const Architecture* a = find_architecture(arch);
  c->rope_layout = a->gguf_rope_layout;
  c->attn_qkv_bias = a->qkv_bias;
  c->attn_qk_norm = a->qk_norm;

  const std::string scaling_key = p + "rope.scaling.type";
  const std::string scaling = m.string_or(scaling_key, "none");
  if (scaling == "none") {
    c->rope_scaling.type = "none";
  } else if (scaling == "linear") {
    c->rope_scaling.type = "linear";
    c->rope_scaling.factor = m.number_or(p + "rope.scaling.factor", 1.0f);
  } else {
    m.fail(scaling_key, "= '" + scaling + "' is not supported (none, linear)");
  }
  c->rope_scaling.original_max_position =
      m.positive_or(p + "rope.scaling.original_context_length", c->rope_scaling.original_max_position);
}

void read_tokenizer(const Metadata& m, const std::string& path, TokenizerData* t) {
  t->source = path;
  t->model = m.string_or("tokenizer.ggml.model", "");
  if (const GgufValue* v = m.array_or_null("tokenizer.ggml.tokens", GgufType::STRING)) {
    t->pieces = v->strings;
  }
  const size_t n = t->pieces.size();
  if (const GgufValue* v = m.array_or_null("tokenizer.ggml.scores", GgufType::F32)) {
    if (v->floats.size() != n) {
      m.fail("tokenizer.ggml.scores", "has " + std::to_string(v->floats.size()) +
                                          " entries for " + std::to_string(n) + " tokens");
    }
    t->scores.assign(v->floats.begin(), v->floats.end());
  }
  if (const GgufValue* v = m.array_or_null("tokenizer.ggml.token_type", GgufType::I32)) {
    if (v->ints.size() != n) {
      m.fail("tokenizer.ggml.token_type", "has " + std::to_string(v->ints.size()) +
                                              " entries for " + std::to_string(n) + " tokens");
    }
    t->types.reserve(n);
    for (uint64_t x : v->ints) t->types.push_back(static_cast<int32_t>(x));
  }
  t->bos_id = m.token_id_or("tokenizer.ggml.bos_token_id", t->bos_id, n);
  t->eos_id = m.token_id_or("tokenizer.ggml.eos_token_id", t->eos_id, n);
  t->unk_id = m.token_id_or("tokenizer.ggml.unknown_token_id", t->unk_id, n);
  t->pad_id = m.token_id_or("tokenizer.ggml.padding_token_id", t->pad_id, n);
  t->eot_id = m.token_id_or("tokenizer.ggml.eot_token_id", t->eot_id, n);
  t->eom_id = m.token_id_or("tokenizer.ggml.eom_token_id", t->eom_id, n);
  t->add_bos = m.boolean_or("tokenizer.ggml.add_bos_token", t->add_bos);
  t->chat_template = m.string_or("tokenizer.chat_template", "");
  if (const GgufValue* v = m.array_or_null("tokenizer.ggml.merges", GgufType::STRING)) t->merges = v->strings;
  t->pre = m.string_or("tokenizer.ggml.pre", "");
  // GGUF has no keys for these: they follow from the pre-tokenizer, as in llama.cpp. An
  // unknown name is the tokenizer's error to report (load_tokenizer_for).
  if (const PreTokenizerPreset* p = find_pre_tokenizer(t->pre)) {
    t->ignore_merges = p->ignore_merges;
    t->normalizer = std::string(p->normalizer);
  }
}

}  // namespace

std::unique_ptr<ModelFile> load_gguf(const std::string& path) {
  auto map = std::make_shared<MappedFile>(path);
  const GgufFile g = GgufFile::parse(map->data(), map->size(), path);
  const Metadata m(g, path);

  auto model = std::make_unique<ModelFile>();
  model->path = path;
  model->format = "gguf";

  const std::string arch = m.string("general.architecture", m.require("general.architecture"));
  if (!find_architecture(arch))
    m.fail("general.architecture", "is '" + arch + "': llmwb runs llama-family models only (" + supported_architectures() + ")");
  read_config(m, arch, &model->config);
  read_tokenizer(m, path, &model->tokenizer);

  model->tensors.reserve(g.tensors.size());
  for (const GgufTensorInfo& ti : g.tensors) {
    TensorView t;
    t.name = ti.name;
    t.dtype = ti.dtype;
    // GGUF lists ne0 (the contiguous dimension) first; shapes here are outermost first.
    t.shape.assign(ti.ne.rbegin(), ti.ne.rend());
    t.data = map->data() + g.data_offset + ti.offset;
    t.nbytes = ti.nbytes;
    model->tensors.push_back(std::move(t));
  }

  ModelConfig& c = model->config;
  const std::string vocab_key = arch + ".vocab_size";
  if (m.find(vocab_key)) {
    c.vocab_size = m.positive(vocab_key);
  } else if (!model->tokenizer.pieces.empty()) {
    c.vocab_size = static_cast<int>(model->tokenizer.pieces.size());
  } else if (const TensorView* e = model->find("token_embd.weight")) {
    c.vocab_size = static_cast<int>(e->shape.front());
  } else {
    throw Error(path, "cannot tell the vocabulary size: no '" + vocab_key +
                          "', no tokenizer.ggml.tokens and no token_embd.weight");
  }
  if (model->tokenizer.pieces.size() > static_cast<size_t>(c.vocab_size)) {
    throw Error(path, "key 'tokenizer.ggml.tokens' has " +
                          std::to_string(model->tokenizer.pieces.size()) +
                          " tokens, more than the vocabulary size " + std::to_string(c.vocab_size));
  }
  if (model->tokenizer.bos_id >= 0) c.bos_id = model->tokenizer.bos_id;
  if (model->tokenizer.eos_id >= 0) c.eos_id = model->tokenizer.eos_id;
  c.tied_embeddings = model->find("output.weight") == nullptr;
  // Llama 3.1 GGUFs carry their RoPE frequency scaling as a tensor of per-pair divisors.
  if (const TensorView* f = model->find("rope_freqs.weight")) {
    if (f->dtype != DType::F32 || f->numel() != c.head_dim / 2)
      throw Error(path, "tensor 'rope_freqs.weight' must be F32 with head_dim / 2 = " +
                            std::to_string(c.head_dim / 2) + " elements");
    const float* v = reinterpret_cast<const float*>(f->data);
    c.rope_freq_factors.assign(v, v + f->numel());
  }
  c.validate(path);

  for (const auto& [key, value] : g.kvs) model->metadata[key] = value.to_string();
  model->maps.push_back(std::move(map));
  return model;
}

}  // namespace llmwb
