#include "llmwb/tuning_config.h"

#include <cstdio>
#include <cstdlib>

#include "llmwb/errors.h"

namespace llmwb {

namespace {

bool valid_simd(const std::string& v) { return v.empty() || v == "scalar" || v == "avx2" || v == "avx512"; }

bool valid_prefetch(const std::string& v) {
  if (v.empty() || v == "off") return true;
  if (v.size() > 5 || v.find_first_not_of("0123456789") != std::string::npos) return false;
  const int n = std::stoi(v);
  return n % 64 == 0 && n <= 16384;
}

bool valid_streams(const std::string& v) { return v.empty() || v == "1" || v == "2" || v == "4"; }

struct Switch {
  const char* name;
  const char* env;
  const char* help;
  bool TuningConfig::*flag;          // a 0|1 switch, or
  std::string TuningConfig::*text;   // a value checked by `valid` ("" = the default)
  bool (*valid)(const std::string&);
  const char* values;                // what `valid` takes, for messages
  const char* default_name;          // describe()'s word for ""
};

constexpr Switch kSwitches[] = {
    {"simd", "LLMWB_SIMD", "scalar|avx2|avx512: lower the CPU kernels' SIMD level (default: the best the CPU has)",
     nullptr, &TuningConfig::simd, valid_simd, "best, scalar, avx2, avx512", "best"},
    {"float_panels", "LLMWB_FLOAT_PANELS", "0|1: F32/F16/BF16 weights as 16-row panels on AVX-512 (default 1)",
     &TuningConfig::float_panels, nullptr, nullptr, nullptr, nullptr},
    {"decode_prefetch", "LLMWB_DECODE_PREFETCH",
     "auto|off|BYTES: how far ahead the CPU decode GEMVs prefetch each weight stream into L1 (a multiple of 64 up "
     "to 16384; default auto: per microarchitecture)",
     nullptr, &TuningConfig::decode_prefetch, valid_prefetch, "auto, off, or bytes: a multiple of 64 up to 16384",
     "auto"},
    {"decode_streams", "LLMWB_DECODE_STREAMS",
     "auto|1|2|4: how many weight streams (16-row tiles side by side) each thread's quantized decode GEMV reads "
     "(AVX2: at most 2; default auto: per microarchitecture)",
     nullptr, &TuningConfig::decode_streams, valid_streams, "auto, 1, 2 or 4", "auto"},
    {"cuda_graphs", "LLMWB_CUDA_GRAPHS", "0|1: replay CUDA graphs for pure decode steps (default 1)",
     &TuningConfig::cuda_graphs, nullptr, nullptr, nullptr, nullptr},
    {"nvtx_layers", "LLMWB_NVTX_LAYERS", "0|1: an NVTX range per layer, for Nsight Systems (default 0)",
     &TuningConfig::nvtx_layers, nullptr, nullptr, nullptr, nullptr},
    {"device_sampling", "LLMWB_DEVICE_SAMPLING", "0|1: sample on the device where the runner can (default 1)",
     &TuningConfig::device_sampling, nullptr, nullptr, nullptr, nullptr},
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

}  // namespace

TuningConfig TuningConfig::from_environment() {
  TuningConfig t;
  for (const Switch& s : kSwitches) {
    const char* e = std::getenv(s.env);
    if (!e || !*e) continue;
    std::string v = e;
    if (s.text) {
      if (v == s.default_name) v.clear();
      if (s.valid(v)) t.*s.text = v;
      else std::fprintf(stderr, "%s: '%s' is not one of %s; using %s\n", s.env, e, s.values, s.default_name);
    } else if (!parse_env_bool(v, &(t.*s.flag))) {
      std::fprintf(stderr, "%s: '%s' is not 0 or 1; keeping the default (%s)\n", s.env, e,
                   t.*s.flag ? "1" : "0");
    }
  }
  return t;
}

std::vector<std::pair<std::string, std::string>> TuningConfig::describe() const {
  std::vector<std::pair<std::string, std::string>> v;
  for (const Switch& s : kSwitches) {
    if (s.text) v.emplace_back(s.name, (this->*s.text).empty() ? s.default_name : this->*s.text);
    else v.emplace_back(s.name, this->*s.flag ? "on" : "off");
  }
  return v;
}

void TuningConfig::set(const std::string& name, const std::string& value) {
  for (const Switch& s : kSwitches) {
    if (name != s.name) continue;
    if (s.text) {
      const std::string v = value == s.default_name ? "" : value;
      if (!s.valid(v)) throw Error("tuning", name + ": '" + value + "' is not one of " + s.values);
      this->*s.text = v;
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
