#include "backend/cuda/cublas_loader.h"

#include <dlfcn.h>

#include <string>
#include <type_traits>

#include "llmwb/errors.h"

namespace llmwb::cuda {

namespace {

#if defined(LLMWB_CUDA_EMU)
// The emulation build (tests/cuda_emu) links its CPU implementations of these entry points.
CublasApi load() {
  CublasApi api;
  api.create = &cublasCreate_v2;
  api.destroy = &cublasDestroy_v2;
  api.set_stream = &cublasSetStream_v2;
  api.set_workspace = &cublasSetWorkspace_v2;
  api.sgemm = &cublasSgemm_v2;
  api.gemm_ex = static_cast<CublasGemmExFn>(&cublasGemmEx);
  api.status_name = &cublasGetStatusName;
  api.status_string = &cublasGetStatusString;
  return api;
}
#else
CublasApi load() {
  // The soname of the toolkit built against, then the toolkit's own copy (a toolkit outside
  // the loader's search path, as /usr/local/cuda is unless configured).
  std::string tried;
  void* lib = nullptr;
  for (const char* name : {LLMWB_CUBLAS_SONAME, LLMWB_CUBLAS_PATH}) {
    lib = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib) break;
    const char* why = ::dlerror();
    tried += std::string(tried.empty() ? "" : "; ") + (why ? why : name);
  }
  if (!lib) throw Error("cublas", "cannot load cuBLAS (" + tried + ")");
  CublasApi api;
  auto bind = [&](auto& fn, const char* symbol) {
    void* p = ::dlsym(lib, symbol);
    if (!p) throw Error("cublas", std::string(LLMWB_CUBLAS_SONAME) + " has no " + symbol);
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
  bind(api.create, "cublasCreate_v2");
  bind(api.destroy, "cublasDestroy_v2");
  bind(api.set_stream, "cublasSetStream_v2");
  bind(api.set_workspace, "cublasSetWorkspace_v2");
  bind(api.sgemm, "cublasSgemm_v2");
  bind(api.gemm_ex, "cublasGemmEx");
  bind(api.status_name, "cublasGetStatusName");
  bind(api.status_string, "cublasGetStatusString");
  return api;   // the library stays open for the life of the process
}
#endif

}  // namespace

const CublasApi& cublas() {
  static const CublasApi api = load();
  return api;
}

}  // namespace llmwb::cuda
