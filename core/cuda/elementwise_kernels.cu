// CUDA element-wise kernels: fill, dtype conversion, axpy. They call the same conversion
// functions (core/dtype.h, DPLAB_HD) as the CPU kernels, so a cast gives the same bits on both.
#include "dplab/core/cuda/launch.h"

namespace dplab::cuda {
namespace {

constexpr int kThreads = 256;
inline int blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b > 65535 * 32 ? 65535 * 32 : b);
}

// Grid-stride loops: correct for any n with a bounded grid.
__global__ void fill_kernel(void* y, DType t, int64_t n, float v) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    store_from_f32(y, t, i, v);
}

__global__ void convert_kernel(const void* x, DType xt, void* y, DType yt, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    store_from_f32(y, yt, i, load_as_f32(x, xt, i));
}

__global__ void axpy_kernel(float alpha, const void* x, DType xt, float* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] += alpha * load_as_f32(x, xt, i);
}

}  // namespace

cudaError_t launch_fill(void* y, DType t, int64_t n, float value, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  fill_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, t, n, value);
  return cudaPeekAtLastError();
}

cudaError_t launch_convert(const void* x, DType xt, void* y, DType yt, int64_t n,
                           cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  convert_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, xt, y, yt, n);
  return cudaPeekAtLastError();
}

cudaError_t launch_axpy(float alpha, const void* x, DType xt, float* y, int64_t n,
                        cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  axpy_kernel<<<blocks_for(n), kThreads, 0, stream>>>(alpha, x, xt, y, n);
  return cudaPeekAtLastError();
}

}  // namespace dplab::cuda
