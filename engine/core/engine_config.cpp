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

SpeculativeConfig parse_speculative(const std::string& v, int k) {
  SpeculativeConfig s;
  s.num_speculative_tokens = k;
  auto bad = [&](const std::string& why) {
    return Error("speculative", "'" + v + "' " + why);
  };
  auto number = [&](const std::string& text) {
    size_t used = 0;
    int n = -1;
    try {
      n = std::stoi(text, &used);
    } catch (const std::exception&) {
    }
    if (text.empty() || used != text.size() || n < 1 || n > 4096) throw bad("has '" + text + "' where a number >= 1 belongs");
    return n;
  };
  if (v.empty() || v == "off") return SpeculativeConfig{};
  if (v.rfind("draft:", 0) == 0 && v.size() > 6) {
    s.method = "draft_model";
    s.model = v.substr(6);
  } else if (v == "ngram") {
    s.method = "ngram";
  } else if (v.rfind("ngram:", 0) == 0) {
    s.method = "ngram";
    const std::string rest = v.substr(6);
    const size_t colon = rest.find(':');
    if (colon == std::string::npos) throw bad("is not ngram:MIN:MAX");
    s.prompt_lookup_min = number(rest.substr(0, colon));
    s.prompt_lookup_max = number(rest.substr(colon + 1));
    if (s.prompt_lookup_max < s.prompt_lookup_min) throw bad("has MAX below MIN");
  } else if (v == "self-int4" || v == "self_int4") {
    s.method = "self_int4";
  } else if (v.rfind("layers:", 0) == 0) {
    s.method = "layers";
    s.layers = number(v.substr(7));
  } else {
    throw bad("is not draft:PATH, ngram[:MIN:MAX], self-int4 or layers:K");
  }
  return s;
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
  if (!(draft_p_min < 1) || (draft_p_min < 0 && draft_p_min != -1))
    throw Error("speculative.draft_p_min", "must be in [0, 1) (or -1 = automatic), got " + std::to_string(draft_p_min));
  if (method == "layers" && layers < 1) throw Error("speculative.layers", "must be at least 1, got " + std::to_string(layers));
}

}  // namespace llmwb
