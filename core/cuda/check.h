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

// After a kernel launch: launch-configuration errors surface here, not at the next sync. The
// launchers (core/cuda/*_kernels.cu) return cudaGetLastError(), which also resets the record
// (cuda_runtime_api.h: cudaPeekAtLastError "does not reset the error to cudaSuccess like
// cudaGetLastError()"), so an error is reported once, by the launch that caused it, and never
// again by every later launch; PyTorch's C10_CUDA_KERNEL_LAUNCH_CHECK does the same. Calls
// that leave an expected status in the record (cudaEventQuery/cudaStreamQuery's
// cudaErrorNotReady, a cudaMalloc that is retried) clear it at once (event.cpp,
// caching_allocator.cpp, stream_wait.cpp).
#define DPLAB_CUDA_CHECK_LAUNCH(name) DPLAB_CUDA_CHECK(cudaGetLastError())

// cuDNN and cuBLAS calls, in the same style. The macros name types and functions of cudnn.h /
// cublas_v2.h only where they are expanded, so this header stays free of those includes: a file
// that uses DPLAB_CUDNN_CHECK includes <cudnn.h> itself (DPLAB_CUBLAS_CHECK:
// "dplab/core/cuda/cublas_api.h", cuBLAS being loaded on first use).
// cudnnGetLastErrorString (cuDNN >= 9) adds the library's own explanation of the failure.
#define DPLAB_CUDNN_CHECK(call)                                                        \
  do {                                                                                 \
    cudnnStatus_t dplab_st_ = (call);                                                  \
    if (dplab_st_ != CUDNN_STATUS_SUCCESS) {                                           \
      char dplab_msg_[512] = {0};                                                      \
      cudnnGetLastErrorString(dplab_msg_, sizeof(dplab_msg_));                         \
      ::dplab::throw_error(__FILE__, __LINE__,                                         \
                           ::fmt::format("cuDNN call {} failed: {} ({})", #call,       \
                                         cudnnGetErrorString(dplab_st_), dplab_msg_)); \
    }                                                                                  \
  } while (0)

#define DPLAB_CUBLAS_CHECK(call)                                                             \
  do {                                                                                       \
    cublasStatus_t dplab_st_ = (call);                                                       \
    if (dplab_st_ != CUBLAS_STATUS_SUCCESS)                                                  \
      ::dplab::throw_error(__FILE__, __LINE__,                                               \
                           ::fmt::format("cuBLAS call {} failed: {} ({})", #call,            \
                                         ::dplab::cuda::cublas().status_name(dplab_st_),     \
                                         ::dplab::cuda::cublas().status_string(dplab_st_))); \
  } while (0)
