// llmwb/distributed.h — running ranks as processes: `mpirun -np N llmwb-cli generate ... --dist mpi
// --tensor-parallel-size T --pipeline-parallel-size P` (N = T x P). Rank 0 runs the engine as
// usual (EngineConfig::dist = "mpi"); every other process calls run_mpi_worker_process instead,
// which serves rank 0's steps and returns when rank 0 ends.
#pragma once

#include "llmwb/engine_config.h"
#include "llmwb/model_info.h"

namespace llmwb {

// Whether this build has the MPI communicator (LLMWB_MPI).
bool mpi_built();
// Whether this build has the NCCL communicator of the CUDA ranks (LLMWB_NCCL; `--dist nccl`).
bool nccl_built();
// True in a process that mpirun started as a world rank other than 0 (read from the launcher's
// environment, without starting MPI).
bool is_mpi_worker_process();
// Starts MPI in rank 0's process now (so that its workers are released at exit). No-op without MPI.
void mpi_start();
// Serves rank 0's commands with this process's rank of `config`'s model; the process exit code.
int run_mpi_worker_process(const EngineConfig& config);

// Throws llmwb::Error("tensor_parallel_size" / "pipeline_parallel_size", ...) unless a layout of
// `tensor_parallel_size` x `pipeline_parallel_size` ranks fits `model`: TP divides its KV heads,
// 1 <= PP <= its layers. The rule the runners apply at load, for a caller that checks a choice
// before loading (the GUI's Settings). A quantized column split off block boundaries is found
// only at load.
void check_parallel_layout(const ModelInfo& model, int tensor_parallel_size, int pipeline_parallel_size);

}  // namespace llmwb
