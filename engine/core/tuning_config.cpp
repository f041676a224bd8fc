#include "llmwb/tuning_config.h"

#include <cstdio>
#include <cstdlib>

#include "llmwb/errors.h"

namespace llmwb {

namespace {

struct Switch {
  const char* name;
  const char* env;
  const char* help;
  bool TuningConfig::*flag;   // nullptr: the simd level
};

constexpr Switch kSwitches[] = {
    {"simd", "LLMWB_SIMD", "scalar|avx2|avx512: lower the CPU kernels' SIMD level (default: the best the CPU has)",
     nullptr},
    {"float_panels", "LLMWB_FLOAT_PANELS", "0|1: F32/F16/BF16 weights as 16-row panels on AVX-512 (default 1)",
     &TuningConfig::float_panels},
    {"cuda_graphs", "LLMWB_CUDA_GRAPHS", "0|1: replay CUDA graphs for pure decode steps (default 1)",
     &TuningConfig::cuda_graphs},
    {"nvtx_layers", "LLMWB_NVTX_LAYERS", "0|1: an NVTX range per layer, for Nsight Systems (default 0)",
     &TuningConfig::nvtx_layers},
    {"device_sampling", "LLMWB_DEVICE_SAMPLING", "0|1: sample on the device where the runner can (default 1)",
     &TuningConfig::device_sampling},
};

// An environment variable is 0 or 1, as documented; --tuning also takes on/off and true/false.
bool parse_env_bool(const std::string& v, bool* out) {
  if (v == "1") return *out = true, true;
  if (v == "0") return *out = false, true;
  return false;
}

bool parse_bool(const std::string& v, bool* out) {
  if (v == "1" || v == "on" || v == "true") return *out = true, true;
  if (v == "0" || v == "off" || v == "false") return *out = false, true;
  return false;
}

bool valid_simd(const std::string& v) { return v.empty() || v == "scalar" || v == "avx2" || v == "avx512"; }

}  // namespace

TuningConfig TuningConfig::from_environment() {
  TuningConfig t;
  for (const Switch& s : kSwitches) {
    const char* e = std::getenv(s.env);
    if (!e || !*e) continue;
    const std::string v = e;
    if (!s.flag) {
      if (valid_simd(v)) t.simd = v;
      else std::fprintf(stderr, "%s: unknown level '%s' (scalar, avx2, avx512); using the best\n", s.env, e);
    } else if (!parse_env_bool(v, &(t.*s.flag))) {
      std::fprintf(stderr, "%s: '%s' is not 0 or 1; keeping the default (%s)\n", s.env, e,
                   t.*s.flag ? "1" : "0");
    }
  }
  return t;
}

std::vector<std::pair<std::string, std::string>> TuningConfig::describe() const {
  std::vector<std::pair<std::string, std::string>> v;
  for (const Switch& s : kSwitches)
    v.emplace_back(s.name, s.flag ? (this->*s.flag ? "on" : "off") : (simd.empty() ? "best" : simd));
  return v;
}

void TuningConfig::set(const std::string& name, const std::string& value) {
  for (const Switch& s : kSwitches) {
    if (name != s.name) continue;
    if (!s.flag) {
      const std::string v = value == "best" ? "" : value;
      if (!valid_simd(v)) throw Error("tuning", "simd: '" + value + "' is not a level (best, scalar, avx2, avx512)");
      simd = v;
    } else if (!parse_bool(value, &(this->*s.flag))) {
      throw Error("tuning", name + ": '" + value + "' is not on or off");
    }
    return;
  }
  std::string names;
  for (const Switch& s : kSwitches) names += std::string(names.empty() ? "" : ", ") + s.name;
  throw Error("tuning", "'" + name + "' is not a tuning switch (" + names + ")");
}

std::string TuningConfig::environment_help() {
  std::string h;
  for (const Switch& s : kSwitches) h += std::string("  ") + s.env + "  " + s.help + "\n";
  return h;
}

}  // namespace llmwb
