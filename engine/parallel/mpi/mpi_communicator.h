// mpi_communicator.h — the Communicator over MPI (Open MPI): one rank per process, on one machine
// or many (`mpirun -np N llmwb-cli ... --dist mpi`). Built only with LLMWB_MPI.
#pragma once

#include <mpi.h>

#include "parallel/communicator.h"

namespace llmwb {

class MpiCommunicator final : public Communicator {
 public:
  // Uses `comm` (not owned unless `owned`: then freed by the destructor).
  explicit MpiCommunicator(MPI_Comm comm, bool owned = false);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void barrier() override;
  void all_reduce_sum(float* x, int64_t n) override;
  void all_gather(const float* in, int64_t n, float* out) override;
  void broadcast(float* x, int64_t n, int root) override;
  void broadcast_bytes(void* data, int64_t bytes, int root) override;
  void send(const float* x, int64_t n, int to) override;
  void recv(float* x, int64_t n, int from) override;
  // Ends every process of the job (MPI_Abort) after printing `why`: no rank is left waiting.
  void abort(const char* why) override;

 private:
  MPI_Comm comm_;
  bool owned_;
  int rank_ = 0, size_ = 1;
};

// MPI initialized once per process (MPI_THREAD_SERIALIZED), finalized at exit.
void mpi_ensure_initialized();
int mpi_world_rank();
int mpi_world_size();

}  // namespace llmwb
