// engine_config.cpp — the value lists behind EngineConfig's string fields, so that front ends
// offer exactly what the engine accepts.
#include "llmwb/engine_config.h"

#include <algorithm>

#include "llmwb/errors.h"
#include "quant/quant_scheme.h"

namespace llmwb {

const std::vector<std::string>& quantize_schemes() { return QuantScheme::names(); }

const std::vector<std::string>& kv_dtypes() {
  static const std::vector<std::string> v{"f32", "f16", "int8"};
  return v;
}

const std::vector<std::string>& speculative_methods() {
  static const std::vector<std::string> v{"ngram", "draft_model", "self_int4", "layers"};
  return v;
}

void SpeculativeConfig::validate() const {
  if (method.empty()) return;
  const auto& m = speculative_methods();
  if (std::find(m.begin(), m.end(), method) == m.end())
    throw Error("speculative.method", "'" + method + "' is not ngram, draft_model, self_int4 or layers");
  if (num_speculative_tokens < 0 || num_speculative_tokens > 64)
    throw Error("speculative.num_speculative_tokens", "must be in [0, 64] (0 = adaptive), got " +
                                                          std::to_string(num_speculative_tokens));
  if (method == "ngram" && (prompt_lookup_min < 1 || prompt_lookup_max < prompt_lookup_min))
    throw Error("speculative.prompt_lookup_min", "needs 1 <= prompt_lookup_min <= prompt_lookup_max, got " +
                                                     std::to_string(prompt_lookup_min) + " and " +
                                                     std::to_string(prompt_lookup_max));
  if (method == "draft_model" && model.empty()) throw Error("speculative.model", "draft_model needs a draft model file");
  if (method == "layers" && layers < 1) throw Error("speculative.layers", "must be at least 1, got " + std::to_string(layers));
}

}  // namespace llmwb
