#include "quant/quant_scheme.h"

#include "llmwb/errors.h"

namespace llmwb {

namespace {

bool is_k_quant(DType t) { return t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K; }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

const std::vector<std::string>& QuantScheme::names() {
  static const std::vector<std::string> n = {"int8", "int8-asym", "int4-g32", "int4-g128", "q8_0",
                                             "q4_0", "q4_k",      "q5_k",     "q6_k",      "q4_k_m"};
  return n;
}

QuantScheme QuantScheme::parse(const std::string& name) {
  // int4-g32 is GGUF's Q4_1 (asymmetric, groups of 32) so that llama.cpp reads the file; only
  // rows with a partial last group use our INT4_G32 (the same bytes plus a padded tail block).
  // The 4-bit schemes keep the head in Q6_K, as llama.cpp's Q4_0 / Q4_1 files do: 6.56 bits
  // instead of Q8_0's 8.5 is 16 MB less to read per token on tinyllama (2.4% of int4-g32's
  // bytes); rows that are not whole super-blocks of 256 take Q8_0, then INT8_ROW (choose()).
  if (name == "int8") return {name, DType::INT8_ROW, DType::INT8_ROW, false, DType::INT8_ROW, {}, false};
  if (name == "int8-asym") return {name, DType::INT8_ASYM_ROW, DType::INT8_ASYM_ROW, false, DType::INT8_ASYM_ROW, {}, false};
  if (name == "int4-g32") return {name, DType::Q4_1, DType::INT4_G32, false, DType::Q6_K, {}, false};
  if (name == "int4-g128") return {name, DType::INT4_G128, DType::INT4_G128, false, DType::Q6_K, {}, false};
  // GGUF-only schemes: a tensor that does not fit stays as stored, so the file stays readable
  // by llama.cpp. q4_0 keeps the head in Q6_K as llama.cpp's own Q4_0 output does.
  if (name == "q8_0") return {name, DType::Q8_0, DType::F32, true, DType::Q8_0, {}, false};
  if (name == "q4_0") return {name, DType::Q4_0, DType::F32, true, DType::Q6_K, {}, false};
  // The k-quant schemes quantize the token embedding too, as llama.cpp does (the lookup
  // decodes one row per token, any type); the output head is Q6_K.
  if (name == "q4_k") return {name, DType::Q4_K, DType::F32, true, DType::Q6_K, DType::Q4_K, false};
  if (name == "q5_k") return {name, DType::Q5_K, DType::F32, true, DType::Q6_K, DType::Q5_K, false};
  if (name == "q6_k") return {name, DType::Q6_K, DType::F32, true, DType::Q6_K, DType::Q6_K, false};
  if (name == "q4_k_m") {
    QuantScheme s{name, DType::Q4_K, DType::F32, true, DType::Q6_K, DType::Q4_K, false};
    s.more_bits_mix = true;
    return s;
  }
  std::string all;
  for (const auto& n : names()) all += (all.empty() ? "" : ", ") + n;
  throw Error("quantize", "unknown scheme '" + name + "'; one of: " + all);
}

QuantScheme QuantScheme::for_backend(const std::string& backend) const {
  QuantScheme s = *this;
  if (backend == "cuda" && is_k_quant(s.output)) s.output = DType::Q8_0;
  return s;
}

bool use_more_bits(int layer, int n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

QuantChoice QuantScheme::choose(const TensorView& t, const TensorRole& role) const {
  // A tied head is the embedding: schemes that keep embeddings keep it.
  if (role.is_embedding && !embedding) return {t.dtype, t.dtype};
  DType want = matrix;
  if (role.is_output_head) {
    want = output;
  } else if (role.is_embedding) {
    want = *embedding;
  } else if (more_bits_mix && role.layer >= 0 && use_more_bits(role.layer, role.n_layers) &&
             (ends_with(t.name, "attn_v.weight") || ends_with(t.name, "ffn_down.weight"))) {
    want = DType::Q6_K;
  }
  if (dtype_row_fits(want, t.cols())) return {want, want};
  // k-quant rows are whole super-blocks of 256; narrower models (stories260K: 64) get Q8_0,
  // the GGUF type of the finest grain, which llama.cpp reads too.
  if (is_k_quant(want) && dtype_row_fits(DType::Q8_0, t.cols())) return {DType::Q8_0, want};
  if (keep_source_on_misfit) return {t.dtype, want};
  // The 8-bit head fallback of the 4-bit schemes: INT8_ROW holds any row length.
  if (role.is_output_head) return {DType::INT8_ROW, want};
  return {fallback, want};
}

}  // namespace llmwb
