// engine_config.cpp — the value lists behind EngineConfig's string fields, so that front ends
// offer exactly what the engine accepts.
#include "llmwb/engine_config.h"

#include "quant/quant_scheme.h"

namespace llmwb {

const std::vector<std::string>& quantize_schemes() { return QuantScheme::names(); }

const std::vector<std::string>& kv_dtypes() {
  static const std::vector<std::string> v{"f32", "f16", "int8"};
  return v;
}

}  // namespace llmwb
