#include "runner/model_runner.h"

#include "llmwb/errors.h"
#include "llmwb/tuning_config.h"
#include "runner/cpu_runner.h"
#include "runner/cuda_runner.h"
#include "runner/parallel_runner.h"

namespace llmwb {

void ModelRunner::inspect(const ForwardBatch&, float*, StepRecording&) {
  throw Error("inspect", "the " + describe() + " runner cannot record the layers of a step");
}

std::unique_ptr<ModelRunner> make_model_runner(const std::string& backend, int threads, const TuningConfig& tuning,
                                               ModelFile& file, LlamaWeights weights,
                                               const RunnerProgress& progress, const ParallelLayout& layout) {
  const bool parallel = layout.tensor != 1 || layout.pipeline != 1;
  if (parallel && backend != "cpu")
    throw Error("tensor_parallel_size", "the " + backend + " backend runs 1 x 1 (tensor and pipeline "
                                       "parallelism run on the cpu backend, ranks as threads)");
  if (parallel)
    return std::make_unique<ParallelRunner>(layout.tensor, layout.pipeline, threads, tuning, file, weights, progress);
  if (backend == "cpu") return std::make_unique<CpuRunner>(threads, tuning, file, std::move(weights), progress);
  if (backend == "cuda") {
    if (progress && !progress(0.0, "uploading weights to the GPU")) throw Error(file.path, "loading cancelled");
    return std::make_unique<CudaRunner>(tuning, file.config, weights);
  }
  throw Error("backend", "'" + backend + "' is not a backend (cpu or cuda)");
}

}  // namespace llmwb
