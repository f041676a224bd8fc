// llmwb/tuning_config.h — the engine's tuning switches, in one place.
//
// None of these changes a token: each selects between implementations that compute the same
// result (kernels, graph replay, where rows are sampled), for A/B measurements and for
// working around a machine. They are part of EngineConfig, so `llmwb-cli inspect`, the GUI's
// model panel and every benchmark JSON can print what was in effect. The LLMWB_* environment
// variables set the defaults (TuningConfig::from_environment, read once per EngineConfig);
// `llmwb-cli --help` lists them.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace llmwb {

struct TuningConfig {
  // CPU kernels: the SIMD level, lowered from the best the CPU has ("" = the best; "scalar",
  // "avx2", "avx512"). Process-wide: the CPU kernels dispatch through one table. LLMWB_SIMD.
  std::string simd;
  // CPU: F32 / F16 / BF16 weights as 16-row panels where AVX-512 runs (off: the in-place
  // kernels). LLMWB_FLOAT_PANELS=0|1.
  bool float_panels = true;
  // CPU: how far ahead (bytes) the decode GEMVs prefetch each weight stream into L1: "" (auto:
  // the default for this microarchitecture), "off", or a multiple of 64 up to 16384.
  // Process-wide, like simd. LLMWB_DECODE_PREFETCH.
  std::string decode_prefetch;
  // CPU: how many 16-row tiles each thread's one-token GEMV over repacked quantized weights
  // reads side by side (weight streams per thread): "" (auto: per microarchitecture), "1", "2"
  // or "4". Process-wide, like simd. LLMWB_DECODE_STREAMS.
  std::string decode_streams;
  // CUDA: pure decode steps replay a captured CUDA graph. LLMWB_CUDA_GRAPHS=0|1.
  bool cuda_graphs = true;
  // CUDA: an NVTX range per layer as well as per phase (for Nsight Systems). LLMWB_NVTX_LAYERS=0|1.
  bool nvtx_layers = false;
  // A runner that can sample logits rows itself does (only the token comes back); off, every
  // row's logits come back and the host samples them. LLMWB_DEVICE_SAMPLING=0|1.
  bool device_sampling = true;

  // The defaults with the LLMWB_* variables applied (0 or 1; a level for LLMWB_SIMD); a value
  // that is not understood is reported on stderr, naming the variable, and the default stays.
  static TuningConfig from_environment();
  // (name, value) pairs in declaration order, for inspect, the model panel and JSON output.
  std::vector<std::pair<std::string, std::string>> describe() const;
  // Sets one switch by the name describe() prints ("float_panels", "simd", ...) from "on"/"off"/
  // "1"/"0"/"true"/"false" (or a level for simd); throws llmwb::Error("tuning", ...) naming the
  // switch or value that is wrong.
  void set(const std::string& name, const std::string& value);
  // The environment variables, one line each ("LLMWB_SIMD  scalar|avx2|avx512: ..."), for --help.
  static std::string environment_help();
};

}  // namespace llmwb
