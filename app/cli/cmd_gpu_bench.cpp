// llmwb-cli gpu-bench — the GPU's two ceilings (device copy bandwidth, cuBLAS bf16 GEMM rate)
// and the CUDA kernels against them: GEMV per weight format (decode's matrix products) and
// the attention kernels against the naive kernel. `llmwb-cli bench --backend cuda` times the
// whole engine; tests/gpu/run-device.sh runs both and compares them with these ceilings.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "args.h"
#include "command.h"
#include "json_output.h"
#include "llmwb/errors.h"

#if LLMWB_HAVE_CUDA
#include "backend/cuda/gpu_bench.h"
#endif

namespace llmwb::cli {
namespace {

int run_gpu_bench(const std::vector<std::string>& argv) {
  Args a(argv, {}, {"json", "quick"});
#if LLMWB_HAVE_CUDA
  const std::string dev = cuda::device_summary();
  if (dev.rfind("no usable GPU", 0) == 0) throw Error("gpu-bench", dev);
  const auto figures = cuda::run_gpu_bench(a.flag("quick"));
  if (a.flag("json")) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& f : figures)
      arr.push_back({{"name", f.name}, {"value", f.value}, {"unit", f.unit}, {"ms", f.ms}, {"detail", f.detail},
                     {"device", dev}});
    std::printf("%s\n", dump_json(arr, 2).c_str());
    return 0;
  }
  std::printf("device: %s\n\n| %-36s | %12s | %-8s | %10s | %s\n", dev.c_str(), "figure", "value", "unit", "ms", "detail");
  for (const auto& f : figures)
    std::printf("| %-36s | %12.1f | %-8s | %10.4f | %s\n", f.name.c_str(), f.value, f.unit.c_str(), f.ms, f.detail.c_str());
  return 0;
#else
  (void)a;
  throw Error("gpu-bench", "this build has no CUDA backend (the CUDA toolkit was not found, or LLMWB_ENABLE_CUDA=OFF)");
#endif
}

const CommandRegistration reg({"gpu-bench", "GPU ceilings (copy bandwidth, bf16 GEMM) and CUDA kernel speeds",
                               "[--quick] [--json]\n"
                               "  --quick                 small sizes (a smoke test, not a measurement)\n"
                               "  --json                  print a JSON array, one object per figure\n",
                               &run_gpu_bench});

}  // namespace
}  // namespace llmwb::cli
