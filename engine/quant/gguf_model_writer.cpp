#include "quant/gguf_model_writer.h"

#include <cstring>

#include "llmwb/errors.h"
#include "format/gguf_llama_metadata.h"
#include "format/gguf_writer.h"

namespace llmwb {

namespace {

// llama.cpp's llama_ftype for the type most matrices have (general.file_type).
bool llama_ftype(const std::string& scheme, uint32_t* out) {
  if (scheme == "q8_0") *out = 7;           // LLAMA_FTYPE_MOSTLY_Q8_0
  else if (scheme == "q4_0") *out = 2;      // MOSTLY_Q4_0
  else if (scheme == "int4-g32") *out = 3;  // MOSTLY_Q4_1
  else if (scheme == "q4_k") *out = 14;     // MOSTLY_Q4_K_S (Q4_K, Q6_K head)
  else if (scheme == "q4_k_m") *out = 15;   // MOSTLY_Q4_K_M
  else if (scheme == "q5_k") *out = 16;     // MOSTLY_Q5_K_S
  else if (scheme == "q6_k") *out = 18;     // MOSTLY_Q6_K
  else return false;
  return true;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

void write_model_gguf(const ModelFile& file, const std::string& path, const std::string& scheme) {
  const ModelConfig& c = file.config;
  GgufWriter w;
  w.set_str("general.architecture", c.architecture);
  w.set_str("general.name", c.name.empty() ? c.architecture : c.name);
  if (uint32_t ft; llama_ftype(scheme, &ft)) w.set_u32("general.file_type", ft);
  bool ggml_quant = false;
  for (const TensorView& t : file.tensors) {
    switch (t.dtype) {
      case DType::Q8_0: case DType::Q4_0: case DType::Q4_1: case DType::Q4_K: case DType::Q5_K: case DType::Q6_K:
        ggml_quant = true;
        break;
      default: break;
    }
  }
  if (ggml_quant) w.set_u32("general.quantization_version", 2);
  if (!scheme.empty()) w.set_str("llmwb.quantization.scheme", scheme);
  set_llama_gguf_metadata(w, c, file.tokenizer, path);
  // GGUF's q/k row order is the architecture's (Llama: interleaved pairs; Qwen: as in HF).
  const Architecture* arch = find_architecture(c.architecture);
  if (!arch) throw Error(path, "architecture '" + c.architecture + "' has no GGUF layout in this writer");
  if (c.rope_layout != arch->gguf_rope_layout && c.rope_layout != RopeLayout::RotateHalf)
    throw Error(path, "cannot write interleaved-RoPE q/k rows as " + c.architecture + "'s rotate-half GGUF layout");
  const bool permute = c.rope_layout != arch->gguf_rope_layout;
  const std::vector<float> rope_freqs = file.find("rope_freqs.weight") ? std::vector<float>{} : gguf_rope_freqs(c);
  if (!rope_freqs.empty()) {
    const int64_t n = static_cast<int64_t>(rope_freqs.size());
    w.add_tensor("rope_freqs.weight", DType::F32, {n},
                 [rope_freqs](uint8_t* dst) { std::memcpy(dst, rope_freqs.data(), sizeof(float) * rope_freqs.size()); });
  }
  for (const TensorView& t : file.tensors) {
    // llama.cpp's convert permutes HF q/k rows so that RoPE pairs (2i, 2i+1); within each head,
    // GGUF row 2j + s is HF row s * hd/2 + j (a Q/K bias likewise, one element per row).
    int heads = 0;
    if (permute) {
      if (ends_with(t.name, ".attn_q.weight") || ends_with(t.name, ".attn_q.bias")) heads = c.n_heads;
      if (ends_with(t.name, ".attn_k.weight") || ends_with(t.name, ".attn_k.bias")) heads = c.n_kv_heads;
      if (ends_with(t.name, ".attn_q_norm.weight") || ends_with(t.name, ".attn_k_norm.weight")) heads = 1;
    }
    if (heads == 0) {
      w.add_tensor(t.name, t.dtype, t.shape, t.data);
      continue;
    }
    const int hd = c.head_dim;
    w.add_tensor(t.name, t.dtype, t.shape, [t, heads, hd](uint8_t* dst) {
      const uint64_t rb = t.shape.size() == 1 ? dtype_row_bytes(t.dtype, 1) : t.row_bytes();
      auto row = [&](int64_t r) { return t.shape.size() == 1 ? t.data + r * rb : t.row(r); };
      for (int h = 0; h < heads; ++h)
        for (int j = 0; j < hd / 2; ++j)
          for (int s = 0; s < 2; ++s)
            std::memcpy(dst + static_cast<uint64_t>(h * hd + 2 * j + s) * rb, row(h * hd + s * hd / 2 + j), rb);
    });
  }
  w.write(path);
}

}  // namespace llmwb
