// Every CUDA runtime call is checked; a failure throws dplab::Error naming the call (with its
// argument text), the error name and string, and the source location.
#pragma once
#include <cuda_runtime.h>

#include "dplab/core/error.h"

#define DPLAB_CUDA_CHECK(call)                                                               \
  do {                                                                                       \
    cudaError_t dplab_err_ = (call);                                                         \
    if (dplab_err_ != cudaSuccess)                                                           \
      ::dplab::throw_error(                                                                  \
          __FILE__, __LINE__,                                                                \
          ::fmt::format("CUDA call {} failed: {} ({})", #call, cudaGetErrorName(dplab_err_), \
                        cudaGetErrorString(dplab_err_)));                                    \
  } while (0)

// After a kernel launch: launch-configuration errors surface here, not at the next sync.
#define DPLAB_CUDA_CHECK_LAUNCH(name) DPLAB_CUDA_CHECK(cudaPeekAtLastError())
