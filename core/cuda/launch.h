// Kernel launchers: the boundary between .cu files (kernels only; they include nothing but the
// shared DPLAB_HD headers, which keeps nvcc away from fmt and the rest of the C++ library) and
// the .cpp wrappers that validate tensors, report errors with context and check every return
// code. Each launcher returns the launch's cudaError_t for the caller to check.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "dplab/core/dtype.h"

namespace dplab::cuda {

cudaError_t launch_fill(void* y, DType t, int64_t n, float value, cudaStream_t stream);
cudaError_t launch_convert(const void* x, DType xt, void* y, DType yt, int64_t n,
                           cudaStream_t stream);
cudaError_t launch_axpy(float alpha, const void* x, DType xt, float* y, int64_t n,
                        cudaStream_t stream);

}  // namespace dplab::cuda
