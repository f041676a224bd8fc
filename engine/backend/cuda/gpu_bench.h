// gpu_bench.h — the GPU's ceilings and the kernels' speed against them (llmwb-cli gpu-bench):
// device copy bandwidth and cuBLAS bf16 GEMM rate, the GEMV per weight format (decode's
// matrix products: bytes of weights per second against the copy bandwidth), and the attention
// kernels against the naive one on Llama-2-7B's attention shape (decode also over f16 and int8
// K/V pools: `attention_*_tiled_f16kv` / `_int8kv`). Every input is random (never
// zeros), every figure is the median of several CUDA-event-timed repetitions after a warm-up.
#pragma once

#include <string>
#include <vector>

namespace llmwb::cuda {

struct BenchFigure {
  std::string name;    // "copy_bandwidth", "gemm_bf16", "gemv_q8_0", "attention_decode_b64_ctx2048_tiled", ...
  double value = 0;    // in `unit`
  std::string unit;    // "GB/s", "TFLOP/s"
  double ms = 0;       // median time of one repetition
  std::string detail;  // shape and what was counted
};

// The device's name, SM count and memory, one line.
std::string device_summary();
// Runs everything (about 20 s on an H200); `quick` shrinks the sizes for a smoke test.
std::vector<BenchFigure> run_gpu_bench(bool quick);

}  // namespace llmwb::cuda
