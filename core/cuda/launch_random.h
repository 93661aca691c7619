// Launchers of the CUDA random family (core/kernels/random.h); kernels in random_kernels.cu.
// Element i takes philox_draw_uniform(seed, stream, i) of core/philox.h, the function ref calls,
// so masks and values are bit-identical to the CPU's. Tensors contiguous, n elements.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace dplab::cuda {

// keep = draw_i >= p; mask[i] = keep; y[i] = keep ? x[i] * scale : 0 (scale = 1 / (1 - p)).
cudaError_t launch_dropout_forward(const float* x, float p, float scale, uint64_t seed,
                                   uint64_t rng_stream, float* y, uint8_t* mask, int64_t n,
                                   cudaStream_t stream);
// dx[i] = mask[i] ? dy[i] * scale : 0.
cudaError_t launch_dropout_backward(const float* dy, const uint8_t* mask, float scale, float* dx,
                                    int64_t n, cudaStream_t stream);
// y[i] = lo + (hi - lo) * draw_i.
cudaError_t launch_uniform(uint64_t seed, uint64_t rng_stream, float lo, float hi, float* y,
                           int64_t n, cudaStream_t stream);

}  // namespace dplab::cuda
