#include "parallel/nccl/nccl_communicator.h"

#include <dlfcn.h>

#include <cstring>
#include <mutex>
#include <type_traits>

#include "backend/cuda/cuda_check.h"
#include "llmwb/errors.h"

namespace llmwb {

namespace {

// The entry points used, looked up once in libnccl.
struct NcclApi {
  decltype(&ncclGetVersion) get_version = nullptr;
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&ncclCommInitAll) comm_init_all = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;
  decltype(&ncclCommAbort) comm_abort = nullptr;
  decltype(&ncclCommGetAsyncError) comm_get_async_error = nullptr;
  decltype(&ncclGetErrorString) get_error_string = nullptr;
  decltype(&ncclGetLastError) get_last_error = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclAllGather) all_gather = nullptr;
  decltype(&ncclSend) send = nullptr;
  decltype(&ncclRecv) recv = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
};

NcclApi load() {
  // The soname first (the loader's search path), then the toolkit's copy found at configure time.
  std::string tried;
  void* lib = nullptr;
  for (const char* name : {LLMWB_NCCL_SONAME, LLMWB_NCCL_PATH}) {
    lib = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib) break;
    const char* why = ::dlerror();
    tried += std::string(tried.empty() ? "" : "; ") + (why ? why : name);
  }
  if (!lib) throw Error("nccl", "cannot load NCCL (" + tried + ")");
  NcclApi api;
  auto bind = [&](auto& fn, const char* symbol) {
    void* p = ::dlsym(lib, symbol);
    if (!p) throw Error("nccl", std::string(LLMWB_NCCL_SONAME) + " has no " + symbol);
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
  bind(api.get_version, "ncclGetVersion");
  bind(api.get_unique_id, "ncclGetUniqueId");
  bind(api.comm_init_rank, "ncclCommInitRank");
  bind(api.comm_init_all, "ncclCommInitAll");
  bind(api.comm_destroy, "ncclCommDestroy");
  bind(api.comm_abort, "ncclCommAbort");
  bind(api.comm_get_async_error, "ncclCommGetAsyncError");
  bind(api.get_error_string, "ncclGetErrorString");
  bind(api.get_last_error, "ncclGetLastError");
  bind(api.all_reduce, "ncclAllReduce");
  bind(api.all_gather, "ncclAllGather");
  bind(api.send, "ncclSend");
  bind(api.recv, "ncclRecv");
  bind(api.group_start, "ncclGroupStart");
  bind(api.group_end, "ncclGroupEnd");
  return api;   // the library stays open for the life of the process
}

const NcclApi& nccl() {
  // Loaded once; a failure is thrown again (and retried) on the next call.
  static std::mutex mu;
  static std::unique_ptr<NcclApi> api;
  std::lock_guard lock(mu);
  if (!api) api = std::make_unique<NcclApi>(load());
  return *api;
}

[[noreturn]] void throw_nccl(ncclResult_t r, const char* call, ncclComm_t comm) {
  const NcclApi& a = nccl();
  std::string what = std::string(call) + ": " + a.get_error_string(r);
  const char* last = a.get_last_error(comm);
  if (last && *last) what += " (" + std::string(last) + ")";
  throw Error("nccl", what);
}

void check(ncclResult_t r, const char* call, ncclComm_t comm = nullptr) {
  if (r != ncclSuccess) throw_nccl(r, call, comm);
}

}  // namespace

#define LLMWB_NCCL(call, comm) check(nccl().call, #call, comm)

std::string nccl_version() {
  int v = 0;
  LLMWB_NCCL(get_version(&v), nullptr);
  // NCCL_VERSION: X * 10000 + Y * 100 + Z from 2.9 on, X * 1000 + Y * 100 + Z before.
  const int major = v >= 10000 ? v / 10000 : v / 1000;
  const int minor = v >= 10000 ? v / 100 % 100 : v / 100 % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
}

std::vector<std::unique_ptr<NcclCommunicator>> NcclCommunicator::init_all(const std::vector<int>& devices) {
  if (devices.empty()) throw Error("nccl", "ncclCommInitAll: no devices");
  for (size_t i = 0; i < devices.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (devices[i] == devices[j])
        throw Error("nccl", "ranks " + std::to_string(j) + " and " + std::to_string(i) + " both on CUDA device " +
                                std::to_string(devices[i]) + ": NCCL needs one GPU per rank");
  std::vector<ncclComm_t> comms(devices.size(), nullptr);
  LLMWB_NCCL(comm_init_all(comms.data(), int(devices.size()), devices.data()), nullptr);
  std::vector<std::unique_ptr<NcclCommunicator>> out;
  for (size_t i = 0; i < devices.size(); ++i)
    out.push_back(std::unique_ptr<NcclCommunicator>(
        new NcclCommunicator(comms[i], int(i), int(devices.size()), devices[i])));
  return out;
}

std::string NcclCommunicator::new_unique_id() {
  ncclUniqueId id;
  LLMWB_NCCL(get_unique_id(&id), nullptr);
  return std::string(id.internal, sizeof id.internal);
}

NcclCommunicator::NcclCommunicator(const std::string& unique_id, int rank, int size, int device)
    : rank_(rank), size_(size), device_(device) {
  if (unique_id.size() != NCCL_UNIQUE_ID_BYTES)
    throw Error("nccl", "a unique id is " + std::to_string(NCCL_UNIQUE_ID_BYTES) + " bytes, got " +
                            std::to_string(unique_id.size()));
  if (rank < 0 || rank >= size) throw Error("nccl", "rank " + std::to_string(rank) + " of " + std::to_string(size));
  ncclUniqueId id;
  std::memcpy(id.internal, unique_id.data(), sizeof id.internal);
  LLMWB_CUDA(cudaSetDevice(device));
  LLMWB_NCCL(comm_init_rank(&comm_, size, id, rank), nullptr);
}

NcclCommunicator::NcclCommunicator(ncclComm_t comm, int rank, int size, int device)
    : comm_(comm), rank_(rank), size_(size), device_(device) {}

NcclCommunicator::~NcclCommunicator() {
  if (comm_ && !aborted_.load()) (void)nccl().comm_destroy(comm_);
}

std::string NcclCommunicator::describe() const { return "nccl " + nccl_version(); }

void NcclCommunicator::check_usable(const char* call) {
  if (aborted_.load()) {
    std::lock_guard lock(mu_);
    throw Error("nccl", std::string(call) + ": the group was aborted: " + why_);
  }
  ncclResult_t async = ncclSuccess;
  LLMWB_NCCL(comm_get_async_error(comm_, &async), comm_);
  if (async != ncclSuccess && async != ncclInProgress) throw_nccl(async, call, comm_);
}

void NcclCommunicator::check_async_error() { check_usable("ncclCommGetAsyncError"); }

void NcclCommunicator::all_reduce_sum(float* x, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  check_usable("ncclAllReduce");
  LLMWB_NCCL(all_reduce(x, x, size_t(n), ncclFloat32, ncclSum, comm_, stream), comm_);
}

void NcclCommunicator::all_gather(const float* in, int64_t n, float* out, cudaStream_t stream) {
  if (n <= 0) return;
  check_usable("ncclAllGather");
  LLMWB_NCCL(all_gather(in, out, size_t(n), ncclFloat32, comm_, stream), comm_);
}

void NcclCommunicator::send(const float* x, int64_t n, int to, cudaStream_t stream) {
  if (to == rank_ || to < 0 || to >= size_)
    throw Error("nccl", "ncclSend: rank " + std::to_string(rank_) + " cannot send to rank " + std::to_string(to));
  if (n <= 0) return;
  check_usable("ncclSend");
  LLMWB_NCCL(group_start(), comm_);
  const ncclResult_t r = nccl().send(x, size_t(n), ncclFloat32, to, comm_, stream);
  const ncclResult_t e = nccl().group_end();
  check(r, "ncclSend", comm_);
  check(e, "ncclGroupEnd", comm_);
}

void NcclCommunicator::recv(float* x, int64_t n, int from, cudaStream_t stream) {
  if (from == rank_ || from < 0 || from >= size_)
    throw Error("nccl", "ncclRecv: rank " + std::to_string(rank_) + " cannot receive from rank " + std::to_string(from));
  if (n <= 0) return;
  check_usable("ncclRecv");
  LLMWB_NCCL(group_start(), comm_);
  const ncclResult_t r = nccl().recv(x, size_t(n), ncclFloat32, from, comm_, stream);
  const ncclResult_t e = nccl().group_end();
  check(r, "ncclRecv", comm_);
  check(e, "ncclGroupEnd", comm_);
}

void NcclCommunicator::abort(const std::string& why) {
  {
    std::lock_guard lock(mu_);
    if (aborted_.load()) return;
    why_ = why;
    aborted_.store(true);
  }
  (void)nccl().comm_abort(comm_);
}

}  // namespace llmwb
