// cuBLAS, loaded on first use. Linking libcublas makes every dplab process load it at start-up,
// and its static initialisation leaves ~210 MB resident (measured: an empty program linked
// with -lcublas peaks at 216 MB, with -lcudart alone at 1.4 MB) even when no GPU is used: a
// CPU training run of a CUDA build paid that in its peak memory. So dplab resolves the few
// cuBLAS entry points it calls with dlopen/dlsym the first time a CUDA linear layer needs
// them, and a CPU run never loads the library.
#pragma once
#include <cublas_v2.h>

namespace dplab::cuda {

struct CublasApi {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSetWorkspace_v2) set_workspace;
  decltype(&cublasSetMathMode) set_math_mode;
  decltype(&cublasSetPointerMode_v2) set_pointer_mode;
  // The exported C entry point (the header adds a C++ overload taking cudaDataType as the
  // compute type, hence no decltype here).
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                            int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                            cublasGemmAlgo_t);
  decltype(&cublasGetStatusName) status_name;
  decltype(&cublasGetStatusString) status_string;
};

// Loads libcublas (its SONAME through the usual search path, else the toolkit's copy found at
// build time) and resolves every entry point; throws naming the library and dlerror() when it
// cannot. Thread-safe; the library stays loaded until exit.
const CublasApi& cublas();

}  // namespace dplab::cuda
