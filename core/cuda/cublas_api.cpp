#include "dplab/core/cuda/cublas_api.h"

#include <dlfcn.h>

#include <string>

#include "dplab/core/error.h"

namespace dplab::cuda {
namespace {

// Where the library is looked for, in order (see core/CMakeLists.txt for the values).
constexpr const char* kCandidates[] = {DPLAB_CUBLAS_SONAME, DPLAB_CUBLAS_PATH};

template <typename Fn>
void resolve(void* lib, const char* library, const char* symbol, Fn& fn) {
  dlerror();
  void* p = dlsym(lib, symbol);
  const char* err = dlerror();
  DPLAB_CHECK(p && !err, "cuBLAS: {} has no symbol {} ({})", library, symbol,
              err ? err : "null address");
  fn = reinterpret_cast<Fn>(p);
}

CublasApi load() {
  void* lib = nullptr;
  std::string tried;
  const char* found = nullptr;
  for (const char* name : kCandidates) {
    lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      found = name;
      break;
    }
    const char* err = dlerror();
    tried += std::string(tried.empty() ? "" : "; ") + name + ": " + (err ? err : "?");
  }
  DPLAB_CHECK(lib != nullptr,
              "cuBLAS could not be loaded ({}); is the CUDA toolkit's lib directory "
              "on LD_LIBRARY_PATH?",
              tried);
  CublasApi api{};
  resolve(lib, found, "cublasCreate_v2", api.create);
  resolve(lib, found, "cublasSetStream_v2", api.set_stream);
  resolve(lib, found, "cublasSetWorkspace_v2", api.set_workspace);
  resolve(lib, found, "cublasSetMathMode", api.set_math_mode);
  resolve(lib, found, "cublasSetPointerMode_v2", api.set_pointer_mode);
  resolve(lib, found, "cublasGemmEx", api.gemm_ex);
  resolve(lib, found, "cublasGetStatusName", api.status_name);
  resolve(lib, found, "cublasGetStatusString", api.status_string);
  return api;
}

}  // namespace

const CublasApi& cublas() {
  static const CublasApi api = load();  // once, thread-safe; a failure throws again next time
  return api;
}

}  // namespace dplab::cuda
