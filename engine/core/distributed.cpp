#include "llmwb/distributed.h"

#include <cstdlib>
#include <string>

#include "llmwb/errors.h"
#include "runner/weight_shards.h"
#if LLMWB_HAVE_MPI
#include "runner/mpi/mpi_runner.h"
#endif

namespace llmwb {

void check_parallel_layout(const ModelInfo& model, int tensor_parallel_size, int pipeline_parallel_size) {
  ModelConfig c;
  c.n_kv_heads = model.n_kv_heads;
  c.n_layers = model.n_layers;
  check_parallel_layout(c, tensor_parallel_size, pipeline_parallel_size);
}

bool mpi_built() { return LLMWB_HAVE_MPI != 0; }

bool is_mpi_worker_process() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char* v = std::getenv(var); v && *v) return std::string(v) != "0";
  return false;
}

void mpi_start() {
#if LLMWB_HAVE_MPI
  mpi_ensure_initialized();
#endif
}

int run_mpi_worker_process(const EngineConfig& config) {
#if LLMWB_HAVE_MPI
  return run_mpi_worker(config);
#else
  (void)config;
  throw Error("dist", "this build has no MPI");
#endif
}

}  // namespace llmwb
