#include "parallel/mpi/mpi_communicator.h"

#include <climits>
#include <cstdio>
#include <string>

#include "llmwb/errors.h"

namespace llmwb {

namespace {

int count(int64_t n, const char* op) {
  if (n < 0 || n > INT_MAX) throw Error(op, "message of " + std::to_string(n) + " elements is too large for MPI");
  return static_cast<int>(n);
}

void check(int rc, const char* op) {
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw Error(op, std::string("MPI: ") + std::string(msg, size_t(len)));
  }
}

struct Session {
  Session() {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  }
  ~Session();
};

}  // namespace

// Defined in the runner's worker loop (mpi_runner.cpp): tells the workers to exit before MPI ends.
void mpi_release_workers();

Session::~Session() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  mpi_release_workers();
  MPI_Finalize();
}

void mpi_ensure_initialized() {
  int done = 0;
  MPI_Initialized(&done);
  if (done) return;
  static Session session;
}

int mpi_world_rank() {
  mpi_ensure_initialized();
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int mpi_world_size() {
  mpi_ensure_initialized();
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm, bool owned) : comm_(comm), owned_(owned) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owned_ && !finalized) MPI_Comm_free(&comm_);
}

void MpiCommunicator::barrier() { check(MPI_Barrier(comm_), "barrier"); }

void MpiCommunicator::all_reduce_sum(float* x, int64_t n) {
  check(MPI_Allreduce(MPI_IN_PLACE, x, count(n, "all_reduce"), MPI_FLOAT, MPI_SUM, comm_), "all_reduce");
}

void MpiCommunicator::all_gather(const float* in, int64_t n, float* out) {
  check(MPI_Allgather(in, count(n, "all_gather"), MPI_FLOAT, out, count(n, "all_gather"), MPI_FLOAT, comm_),
        "all_gather");
}

void MpiCommunicator::broadcast(float* x, int64_t n, int root) {
  check(MPI_Bcast(x, count(n, "broadcast"), MPI_FLOAT, root, comm_), "broadcast");
}

void MpiCommunicator::broadcast_bytes(void* data, int64_t bytes, int root) {
  check(MPI_Bcast(data, count(bytes, "broadcast"), MPI_BYTE, root, comm_), "broadcast");
}

void MpiCommunicator::send(const float* x, int64_t n, int to) {
  check(MPI_Send(x, count(n, "send"), MPI_FLOAT, to, 0, comm_), "send");
}

void MpiCommunicator::recv(float* x, int64_t n, int from) {
  MPI_Status st;
  check(MPI_Recv(x, count(n, "recv"), MPI_FLOAT, from, 0, comm_, &st), "recv");
  int got = 0;
  MPI_Get_count(&st, MPI_FLOAT, &got);
  if (got != n) {
    const std::string what = "rank " + std::to_string(rank_) + " expected " + std::to_string(n) +
                             " floats from rank " + std::to_string(from) + ", got " + std::to_string(got);
    abort(what.c_str());
  }
}

void MpiCommunicator::abort(const char* why) {
  std::fprintf(stderr, "llmwb: rank %d of %d: %s; ending every rank\n", mpi_world_rank(), mpi_world_size(), why);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

}  // namespace llmwb
