#include "quant/quant_scheme.h"

#include "llmwb/errors.h"

namespace llmwb {

const std::vector<std::string>& QuantScheme::names() {
  static const std::vector<std::string> n = {"int8", "int8-asym", "int4-g32", "int4-g128", "q8_0", "q4_0"};
  return n;
}

QuantScheme QuantScheme::parse(const std::string& name) {
  // int4-g32 is GGUF's Q4_1 (asymmetric, groups of 32) so that llama.cpp reads the file; only
  // rows with a partial last group use our INT4_G32 (the same bytes plus a padded tail block).
  if (name == "int8") return {name, DType::INT8_ROW, DType::INT8_ROW, false, DType::INT8_ROW};
  if (name == "int8-asym") return {name, DType::INT8_ASYM_ROW, DType::INT8_ASYM_ROW, false, DType::INT8_ASYM_ROW};
  if (name == "int4-g32") return {name, DType::Q4_1, DType::INT4_G32, false, DType::Q8_0};
  if (name == "int4-g128") return {name, DType::INT4_G128, DType::INT4_G128, false, DType::Q8_0};
  // GGUF-only schemes: a tensor that does not fit stays as stored, so the file stays readable
  // by llama.cpp.
  if (name == "q8_0") return {name, DType::Q8_0, DType::F32, true, DType::Q8_0};
  if (name == "q4_0") return {name, DType::Q4_0, DType::F32, true, DType::Q8_0};
  std::string all;
  for (const auto& n : names()) all += (all.empty() ? "" : ", ") + n;
  throw Error("quantize", "unknown scheme '" + name + "'; one of: " + all);
}

DType QuantScheme::dtype_for(const TensorView& t, bool is_output_head) const {
  const DType want = is_output_head ? output : matrix;
  if (dtype_row_fits(want, t.cols())) return want;
  if (keep_source_on_misfit) return t.dtype;
  // The 8-bit head fallback of the 4-bit schemes: INT8_ROW holds any row length.
  if (is_output_head) return DType::INT8_ROW;
  return fallback;
}

}  // namespace llmwb
