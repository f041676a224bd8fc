// cuda_parallel_runner.h — tensor and pipeline parallelism on CUDA devices, ranks as threads of
// this process: tensor_parallel_size x pipeline_parallel_size ranks, rank r (stage-major:
// r = stage * tp + tp_rank) on CUDA device r % device count, each a CudaModel over its weight
// shard (weight_shards.h) with its own KV pool of its stage's layers and its KV heads.
//
// A step, as the CPU's ParallelRunner (parallel_runner.h): every rank runs the batch at once;
// within a stage the tensor-parallel ranks all-reduce the partial sums of wo and w2 (two per
// layer) on their streams; a stage receives the residual stream from the previous one and sends
// its own to the next; the last stage's ranks each compute their vocabulary range of the logits
// rows, gathered into the step's logits. The collectives go through a DeviceCommunicator:
//   dist "nccl": NcclCommunicator, one GPU per rank (an Error where NCCL is not built or there are
//     fewer GPUs than ranks);
//   dist "threads": HostStagedCommunicator over in-process ThreadGroups (device -> pinned host ->
//     device at each collective), any number of ranks per GPU.
// Decode steps run eagerly (no CUDA graphs), rows are not sampled on the device, and a rank that
// throws aborts the groups (the step throws its error; the runner is unusable after that).
#pragma once

#include <memory>
#include <string>

#include "runner/model_runner.h"

namespace llmwb {

// Throws llmwb::Error("dist" / "tensor_parallel_size" / "pipeline_parallel_size" / "backend", ...)
// for a layout, a dist or a machine that cannot run it. `weights` bound to `file`, which must
// outlive the runner.
std::unique_ptr<ModelRunner> make_cuda_parallel_runner(int tensor_parallel_size, int pipeline_parallel_size,
                                                       const std::string& dist, const TuningConfig& tuning,
                                                       ModelFile& file, const LlamaWeights& weights,
                                                       const RunnerProgress& progress);

}  // namespace llmwb
