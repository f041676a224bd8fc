// llama2c_loader.cpp — a llama2.c checkpoint (Karpathy's run.c, "legacy" version 0 format).
//
// Layout: 7 int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len; a
// negative vocab_size means the classifier is not shared with the embedding), then float32
// arrays, each holding all layers back to back:
//   token_embedding {vocab, dim}, rms_att {L, dim}, wq {L, n_heads*hd, dim}, wk {L, n_kv*hd, dim},
//   wv {L, n_kv*hd, dim}, wo {L, dim, n_heads*hd}, rms_ffn {L, dim}, w1 {L, hidden, dim},
//   w2 {L, dim, hidden}, w3 {L, hidden, dim}, rms_final {dim},
//   freq_cis_real {seq_len, hd/2}, freq_cis_imag {seq_len, hd/2}   (unused: RoPE is recomputed)
//   wcls {vocab, dim}   (only when unshared)
// Every per-layer tensor is a view into the map; nothing is copied. llama2.c applies RoPE to
// interleaved pairs (x[2i], x[2i+1]), hence RopeLayout::Interleaved.
#include <cstdint>
#include <cstring>
#include <filesystem>

#include "llmwb/errors.h"
#include "format/model_file.h"

namespace llmwb {

std::unique_ptr<ModelFile> load_llama2c(const std::string& path) {
  auto map = std::make_shared<MappedFile>(path);
  constexpr uint64_t kHeader = 7 * sizeof(int32_t);
  if (map->size() < kHeader)
    throw Error(path, "file is " + std::to_string(map->size()) + " bytes, too short for the 28-byte llama2.c header");
  int32_t h[7];
  std::memcpy(h, map->data(), kHeader);
  const char* const kField[7] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"};
  for (int i = 0; i < 7; ++i) {
    const bool bad = i == 5 ? h[i] == 0 : h[i] <= 0;
    if (bad)
      throw Error(path, std::string("llama2.c header field ") + kField[i] + " is " + std::to_string(h[i]) +
                            (i == 5 ? ", must be non-zero" : ", must be positive") + " (is this a llama2.c checkpoint?)");
  }
  const int dim = h[0], hidden = h[1], L = h[2], n_heads = h[3], n_kv = h[4], seq_len = h[6];
  const bool shared = h[5] > 0;
  if (h[5] == INT32_MIN) throw Error(path, "llama2.c header field vocab_size is out of range");
  const int vocab = shared ? h[5] : -h[5];
  if (dim % n_heads != 0)
    throw Error(path, "llama2.c header: dim " + std::to_string(dim) + " is not a multiple of n_heads " + std::to_string(n_heads));
  if (n_heads % n_kv != 0)
    throw Error(path, "llama2.c header: n_heads " + std::to_string(n_heads) + " is not a multiple of n_kv_heads " +
                          std::to_string(n_kv));
  const int hd = dim / n_heads;
  if (hd % 2 != 0) throw Error(path, "llama2.c header: head size " + std::to_string(hd) + " is odd, RoPE needs pairs");

  // Element counts in 128-bit so that an absurd header cannot wrap around to the file size.
  using u128 = unsigned __int128;
  const u128 D = dim, H = hidden, NL = L, Q = u128(n_heads) * hd, KV = u128(n_kv) * hd, V = vocab;
  struct Part {
    const char* canon;   // "blk.%d.<canon>" for per-layer arrays, the full name otherwise; null = skipped
    bool per_layer;
    std::vector<int64_t> shape;   // of one layer
  };
  const std::vector<Part> parts = {
      {"token_embd.weight", false, {vocab, dim}},
      {"attn_norm.weight", true, {dim}},
      {"attn_q.weight", true, {n_heads * int64_t{hd}, dim}},
      {"attn_k.weight", true, {n_kv * int64_t{hd}, dim}},
      {"attn_v.weight", true, {n_kv * int64_t{hd}, dim}},
      {"attn_output.weight", true, {dim, n_heads * int64_t{hd}}},
      {"ffn_norm.weight", true, {dim}},
      {"ffn_gate.weight", true, {hidden, dim}},   // w1
      {"ffn_down.weight", true, {dim, hidden}},   // w2
      {"ffn_up.weight", true, {hidden, dim}},     // w3
      {"output_norm.weight", false, {dim}},
      {nullptr, false, {seq_len, hd / 2}},        // freq_cis_real
      {nullptr, false, {seq_len, hd / 2}},        // freq_cis_imag
      {"output.weight", false, {vocab, dim}},     // wcls, unshared only
  };
  const u128 floats = V * D + NL * (D + Q * D + 2 * KV * D + D * Q + D + 3 * H * D) + D +
                      2 * u128(seq_len) * (hd / 2) + (shared ? 0 : V * D);
  const u128 expected = kHeader + floats * 4;
  if (expected != map->size()) {
    const std::string exp = expected > u128(UINT64_MAX) ? std::string("more than 2^64") : std::to_string(uint64_t(expected));
    throw Error(path, "size mismatch: the llama2.c header (dim " + std::to_string(dim) + ", hidden_dim " +
                          std::to_string(hidden) + ", n_layers " + std::to_string(L) + ", n_heads " +
                          std::to_string(n_heads) + ", n_kv_heads " + std::to_string(n_kv) + ", vocab_size " +
                          std::to_string(h[5]) + ", seq_len " + std::to_string(seq_len) + ") implies " + exp +
                          " bytes, the file has " + std::to_string(map->size()));
  }

  auto m = std::make_unique<ModelFile>();
  m->path = path;
  m->format = "llama2c";
  ModelConfig& c = m->config;
  c.architecture = "llama";
  c.name = std::filesystem::path(path).stem().string();
  c.dim = dim;
  c.hidden_dim = hidden;
  c.n_layers = L;
  c.n_heads = n_heads;
  c.n_kv_heads = n_kv;
  c.head_dim = hd;
  c.vocab_size = vocab;
  c.max_seq_len = seq_len;
  c.norm_eps = 1e-5f;        // run.c's rmsnorm
  c.rope_theta = 10000.0f;   // run.c's RoPE base
  c.rope_layout = RopeLayout::Interleaved;
  c.tied_embeddings = shared;
  c.bos_id = 1;
  c.eos_id = 2;
  c.validate(path);

  const uint8_t* p = map->data() + kHeader;
  for (const auto& part : parts) {
    if (part.canon && std::strcmp(part.canon, "output.weight") == 0 && shared) continue;
    uint64_t n = 1;
    for (int64_t d : part.shape) n *= static_cast<uint64_t>(d);
    const int layers = part.per_layer ? L : 1;
    for (int l = 0; l < layers; ++l, p += n * 4) {
      if (!part.canon) continue;
      TensorView v;
      v.name = part.per_layer ? "blk." + std::to_string(l) + "." + part.canon : part.canon;
      v.dtype = DType::F32;
      v.shape = part.shape;
      v.data = p;
      v.nbytes = n * 4;
      m->tensors.push_back(std::move(v));
    }
  }
  m->metadata["llama2c.shared_classifier"] = shared ? "true" : "false";
  m->maps.push_back(std::move(map));
  return m;
}

}  // namespace llmwb
