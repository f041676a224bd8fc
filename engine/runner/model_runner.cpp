#include "runner/model_runner.h"

#include "llmwb/errors.h"
#include "llmwb/tuning_config.h"
#include "runner/cpu_runner.h"
#include "runner/cuda_parallel_runner.h"
#include "runner/cuda_runner.h"
#include "runner/parallel_runner.h"
#if LLMWB_HAVE_MPI
#include "runner/mpi/mpi_runner.h"
#endif

namespace llmwb {

void ModelRunner::inspect(const ForwardBatch&, float*, StepRecording&) {
  throw Error("inspect", "the " + describe() + " runner cannot record the layers of a step");
}

std::unique_ptr<ModelRunner> make_model_runner(const std::string& backend, int threads, const TuningConfig& tuning,
                                               ModelFile& file, LlamaWeights weights,
                                               const RunnerProgress& progress, const ParallelLayout& layout) {
  if (layout.dist != "threads" && layout.dist != "mpi" && layout.dist != "nccl")
    throw Error("dist", "'" + layout.dist + "' is not a way for ranks to talk (threads, mpi or nccl)");
  if (layout.dist == "mpi") {
#if LLMWB_HAVE_MPI
    if (backend != "cpu") throw Error("dist", "mpi runs the cpu backend's ranks");
    return std::make_unique<MpiRunner>(layout.tensor, layout.pipeline, threads, tuning, file, weights, layout.quantize,
                                       layout.micro_batches);
#else
    throw Error("dist", "this build has no MPI (configure with libopenmpi-dev installed, LLMWB_MPI=ON)");
#endif
  }
  const bool parallel = layout.tensor != 1 || layout.pipeline != 1;
  // CUDA ranks: host-staged over in-process groups (threads) or over NCCL (nccl, even 1 x 1).
  if (backend == "cuda" && (parallel || layout.dist == "nccl")) {
    if (layout.micro_batches > 1)
      throw Error("pipeline_micro_batches", "the cuda ranks run a step's stages in turn (micro-batches run on the "
                                            "cpu backend's ranks); use 0 (automatic) or 1");
    if (progress && !progress(0.0, "uploading the ranks' shards to the GPUs")) throw Error(file.path, "loading cancelled");
    return make_cuda_parallel_runner(layout.tensor, layout.pipeline, layout.dist, tuning, file, weights, progress);
  }
  if (layout.dist == "nccl") throw Error("dist", "nccl runs the cuda backend's ranks (--backend cuda)");
  if (parallel && backend != "cpu")
    throw Error("backend", "'" + backend + "' is not a backend (cpu or cuda)");
  if (parallel)
    return std::make_unique<ParallelRunner>(layout.tensor, layout.pipeline, threads, tuning, file, weights, progress,
                                            layout.micro_batches);
  if (backend == "cpu") return std::make_unique<CpuRunner>(threads, tuning, file, std::move(weights), progress);
  if (backend == "cuda") {
    if (progress && !progress(0.0, "uploading weights to the GPU")) throw Error(file.path, "loading cancelled");
    return std::make_unique<CudaRunner>(tuning, file.config, weights);
  }
  throw Error("backend", "'" + backend + "' is not a backend (cpu or cuda)");
}

}  // namespace llmwb
