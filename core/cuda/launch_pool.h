// Launchers of the CUDA pooling kernels (pool_kernels.cu); see core/cuda/pool.cpp for why these
// are dplab's own kernels rather than cuDNN's.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace dplab::cuda {

// Geometry of one pooling call over P = N*C independent planes.
struct PoolGeom {
  int64_t P, H, W, OH, OW;
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
  bool count_include_pad;
};

// y and argmax (int32, h*W + w within the plane, -1 for a window without input) are
// [P, OH, OW]; argmax may be null.
cudaError_t launch_max_pool_forward(const float* x, float* y, int32_t* argmax, const PoolGeom& g,
                                    cudaStream_t s);
cudaError_t launch_max_pool_backward(const float* dy, const int32_t* argmax, float* dx,
                                     const PoolGeom& g, cudaStream_t s);
cudaError_t launch_avg_pool_forward(const float* x, float* y, const PoolGeom& g, cudaStream_t s);
cudaError_t launch_avg_pool_backward(const float* dy, float* dx, const PoolGeom& g, cudaStream_t s);
// Adaptive pooling uses only P, H, W, OH, OW of g.
cudaError_t launch_adaptive_avg_forward(const float* x, float* y, const PoolGeom& g,
                                        cudaStream_t s);
cudaError_t launch_adaptive_avg_backward(const float* dy, float* dx, const PoolGeom& g,
                                         cudaStream_t s);

}  // namespace dplab::cuda
