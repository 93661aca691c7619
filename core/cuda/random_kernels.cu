// CUDA random kernels: one thread per element (grid-stride), each computing its own Philox draw
// from (seed, stream, i) with core/philox.h, exactly as ref's loop does for element i.
#include "dplab/core/cuda/launch.h"
#include "dplab/core/cuda/launch_random.h"
#include "dplab/core/philox.h"

namespace dplab::cuda {
namespace {

__global__ void dropout_forward_kernel(const float* x, float p, float scale, uint64_t seed,
                                       uint64_t rng_stream, float* y, uint8_t* mask, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const bool keep = philox_draw_uniform(seed, rng_stream, i) >= p;
    const float v = x[i];  // read before writing: y may be x
    mask[i] = keep ? 1 : 0;
    y[i] = keep ? v * scale : 0.f;
  }
}

__global__ void dropout_backward_kernel(const float* dy, const uint8_t* mask, float scale,
                                        float* dx, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) dx[i] = mask[i] ? dy[i] * scale : 0.f;
}

__global__ void uniform_kernel(uint64_t seed, uint64_t rng_stream, float lo, float hi, float* y,
                               int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride())
    y[i] = lo + (hi - lo) * philox_draw_uniform(seed, rng_stream, i);
}

}  // namespace

cudaError_t launch_dropout_forward(const float* x, float p, float scale, uint64_t seed,
                                   uint64_t rng_stream, float* y, uint8_t* mask, int64_t n,
                                   cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  dropout_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, p, scale, seed, rng_stream, y,
                                                                 mask, n);
  return cudaGetLastError();
}

cudaError_t launch_dropout_backward(const float* dy, const uint8_t* mask, float scale, float* dx,
                                    int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  dropout_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dy, mask, scale, dx, n);
  return cudaGetLastError();
}

cudaError_t launch_uniform(uint64_t seed, uint64_t rng_stream, float lo, float hi, float* y,
                           int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  uniform_kernel<<<blocks_for(n), kThreads, 0, stream>>>(seed, rng_stream, lo, hi, y, n);
  return cudaGetLastError();
}

}  // namespace dplab::cuda
